/**
 * The floor the async ack is measured against: Fastify and @fastify/multipart with the service's
 * upload limit, one INSERT of the uploaded bytes in a transaction, 202. No authentication, no
 * image check, no queue: what any service that stores an upload must at least do.
 *
 *   DATABASE_URL=… PORT=… node bench/floor-server.ts
 */
import multipart from '@fastify/multipart';
import Fastify from 'fastify';
import pg from 'pg';
import { MAX_IMAGE_BYTES } from '../src/images.ts';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(
  'CREATE TABLE IF NOT EXISTS floor_uploads (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, bytes bytea NOT NULL)',
);

const app = Fastify();
await app.register(multipart, { limits: { fileSize: MAX_IMAGE_BYTES, files: 1 } });
app.post('/upload', async (request, reply) => {
  const file = await request.file();
  if (!file) return reply.code(422).send({ errors: { image: ['missing'] } });
  const bytes = await file.toBuffer();
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: string }>('INSERT INTO floor_uploads (bytes) VALUES ($1) RETURNING id', [
      bytes,
    ]);
    await client.query('COMMIT');
    return reply.code(202).send({ id: rows[0].id });
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
});
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => pool.end()));
