import cookie from '@fastify/cookie';
import fp from 'fastify-plugin';

/** Cookies for the dashboard's session and CSRF tokens; the API never reads them. */
export default fp(async (app) => {
  await app.register(cookie);
});
