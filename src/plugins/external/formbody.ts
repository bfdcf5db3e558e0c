import formbody from '@fastify/formbody';
import fp from 'fastify-plugin';

/** The dashboard's HTML forms post application/x-www-form-urlencoded. */
export default fp(async (app) => {
  await app.register(formbody, { bodyLimit: 64 * 1024 });
});
