import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { errorBody } from '../errors.ts';

export default async function healthRoutes(app: FastifyInstance) {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (request, reply) => {
    try {
      await sql`SELECT 1`.execute(app.deps.db);
      return { status: 'ready' };
    } catch (error) {
      // Polled often during an outage: one line each, without a stack trace.
      request.log.warn(`database unreachable: ${(error as Error).message}`);
      return reply.code(503).send(errorBody('database', 'The database is unreachable'));
    }
  });
}
