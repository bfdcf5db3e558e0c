import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { errorBody } from '../errors.ts';
import { errorEnvelope } from '../schemas/meter-reading.ts';

const healthStatus = (status: string) => Type.Object({ status: Type.Literal(status) }, { description: status });
const Alive = {
  tags: ['Health'],
  operationId: 'checkLiveness',
  summary: 'The process is up',
  response: { 200: healthStatus('ok') },
};
const Ready = {
  tags: ['Health'],
  operationId: 'checkReadiness',
  summary: 'The database answers',
  response: { 200: healthStatus('ready'), 503: errorEnvelope('`database`: the database is unreachable') },
};

export default async function healthRoutes(app: FastifyInstance) {
  app.get('/healthz', { schema: Alive }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: Ready }, async (request, reply) => {
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
