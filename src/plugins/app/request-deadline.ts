import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { errorBody } from '../../errors.ts';

/**
 * A request's body must have arrived within REQUEST_TIMEOUT_SECONDS of its start; otherwise it is
 * answered 408 and its connection closed, so a client trickling an upload cannot hold a
 * connection (and the shutdown) open. The deadline covers receiving the request, not answering
 * it: a sync reading may take longer than it once its upload is in.
 */
export default fp(async (app) => {
  const seconds = app.deps.config.requestTimeoutSeconds;
  app.addHook('onRequest', async (request, reply) => {
    const timer = setTimeout(() => refuseLateBody(request, reply, seconds), seconds * 1000);
    const stop = () => clearTimeout(timer);
    request.raw.once('end', stop);
    reply.raw.once('close', stop);
  });
});

function refuseLateBody(request: FastifyRequest, reply: FastifyReply, seconds: number): void {
  if (reply.sent) return;
  request.log.info(`request body not received within ${seconds} s: answered 408, connection closed`);
  // The handler still waiting for the body fails when the connection closes. The client already
  // has its answer, so Fastify's "Promise errored, but reply.sent" error log would be noise.
  reply.log = request.log.child({}, { level: 'silent' });
  reply
    .code(408)
    .header('connection', 'close')
    .send(errorBody('request', `The request was not received within ${seconds} seconds`));
}
