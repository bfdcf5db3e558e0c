import type { FastifyInstance } from 'fastify';
import { consumptionChart } from '../../dashboard/consumption-chart.ts';
import { DomainError } from '../../errors.ts';
import { HISTORY_MAX_LIMIT, meterHistory } from '../../meters/history.ts';
import { METER_ID_PATTERN } from '../../pipeline/identify-meter.ts';
import { accountId } from '../../plugins/app/session.ts';

/** /dashboard/meters/:meterId: one physical meter's latest submissions and its consumption chart. */
export default async function meterRoutes(app: FastifyInstance): Promise<void> {
  const { db } = app.deps;

  app.get<{ Params: { meterId: string } }>('/meters/:meterId', async (request, reply) => {
    const { meterId } = request.params;
    const history = METER_ID_PATTERN.test(meterId) ? await meterHistory(db, accountId(request), meterId, { limit: HISTORY_MAX_LIMIT }) : undefined;
    if (!history) throw new DomainError('not_found', 'meter_id', 'No meter with this id in your account.');
    return reply.page('meter', {
      title: `Meter ${meterId}`,
      section: 'readings',
      meterId,
      records: history.records,
      more: history.nextBefore !== null,
      chart: consumptionChart(history.records),
    });
  });
}
