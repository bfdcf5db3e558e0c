import path from 'node:path';
import fastifyStatic from '@fastify/static';
import fp from 'fastify-plugin';

/** The stylesheet and the small script, under `assets/` of the prefix it is registered with (/dashboard/assets/). */
export default fp(async (app) => {
  await app.register(fastifyStatic, {
    root: path.join(import.meta.dirname, '..', '..', 'public'),
    prefix: '/assets/',
    maxAge: '1h',
  });
});
