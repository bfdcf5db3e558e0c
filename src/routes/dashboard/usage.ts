import type { FastifyInstance } from 'fastify';
import { accountUsage } from '../../dashboard/usage.ts';
import { accountId } from '../../plugins/app/session.ts';

/** /dashboard/usage: this month against the plan's limit, and the last 30 days day by day. */
export default async function usageRoutes(app: FastifyInstance): Promise<void> {
  app.get('/usage', async (request, reply) => {
    const usage = await accountUsage(app.deps.db, accountId(request));
    return reply.page('usage', {
      title: 'Usage',
      usage,
      chartMax: Math.max(1, ...usage.daily.map((day) => day.count)),
    });
  });
}
