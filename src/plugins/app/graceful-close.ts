import fp from 'fastify-plugin';

/**
 * Requests in flight when the server starts closing are finished, and their responses say
 * `Connection: close`: otherwise each client's keep-alive connection would hold the shutdown
 * open for the whole keep-alive timeout.
 */
export default fp(async (app) => {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
});
