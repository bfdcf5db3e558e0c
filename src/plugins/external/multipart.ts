import multipart from '@fastify/multipart';
import fp from 'fastify-plugin';
import { MAX_IMAGE_BYTES } from '../../images.ts';

/** Uploads are streamed and read only by the route, after the headers have been checked. */
export default fp(async (app) => {
  await app.register(multipart, { limits: { fileSize: MAX_IMAGE_BYTES, files: 1, fields: 10, parts: 20 } });
});
