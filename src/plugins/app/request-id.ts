import { randomUUID } from 'node:crypto';
import type { RawRequestDefaultExpression } from 'fastify';
import fp from 'fastify-plugin';

export const REQUEST_ID_HEADER = 'x-request-id';
/** A client's own id is kept only when it is short and cannot forge log lines or headers. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify's genReqId: the client's X-Request-Id when sane, else a fresh UUID. Logs carry it as reqId. */
export function requestId(request: RawRequestDefaultExpression): string {
  const offered = request.headers[REQUEST_ID_HEADER];
  return typeof offered === 'string' && SANE_REQUEST_ID.test(offered) ? offered : randomUUID();
}

/** Every response, errors and 404s included, says which request it answers. */
export default fp(async (app) => {
  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
  });
});
