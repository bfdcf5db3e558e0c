import fp from 'fastify-plugin';

/** What Node itself accepts as asking for `100 Continue`. */
const CONTINUE_EXPECTATION = /(?:^|\W)100-continue(?:$|\W)/i;

/**
 * A client that sends `Expect: 100-continue` waits for `100 Continue` before it sends the body.
 * Node sends that at once, before any check, unless the server listens for `checkContinue`: here
 * it is sent when the body is about to be read (preParsing), that is after the onRequest checks
 * passed. A request refused before then gets its final answer instead and never sends its body;
 * Node closes the connection after that answer.
 */
export default fp(async (app) => {
  app.server.on('checkContinue', (request, response) => app.server.emit('request', request, response));
  app.addHook('preParsing', async (request, reply, payload) => {
    if (CONTINUE_EXPECTATION.test(request.headers.expect ?? '')) reply.raw.writeContinue();
    return payload;
  });
});
