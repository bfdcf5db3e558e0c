import fp from 'fastify-plugin';
import { errorBody } from '../../errors.ts';

/**
 * Requests in flight when the server starts closing are finished, and their responses say
 * `Connection: close`: otherwise each client's keep-alive connection would hold the shutdown
 * open for the whole keep-alive timeout. A request that arrives on such a connection after that
 * is refused with 503 in the envelope (in place of Fastify's own 503, see app.ts), to be retried.
 */
export default fp(async (app) => {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    return reply
      .code(503)
      .header('retry-after', '1')
      .send(errorBody('server', 'The service is shutting down: retry the request'));
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
});
