import fp from 'fastify-plugin';
import { errorBody } from '../../errors.ts';

/**
 * An HTTP/1.1 request without Host is refused (RFC 9112, 3.2), as Node would, but in the envelope
 * and with the request's id: Node's own refusal (its `requireHostHeader`, off in app.ts) is a bare 400.
 */
export default fp(async (app) => {
  app.addHook('onRequest', async (request, reply) => {
    if (request.raw.httpVersion !== '1.1' || request.headers.host !== undefined) return;
    return reply.code(400).send(errorBody('request', 'An HTTP/1.1 request needs a Host header'));
  });
});
