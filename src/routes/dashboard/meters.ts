import type { FastifyInstance } from 'fastify';
import { consumptionChart } from '../../dashboard/consumption-chart.ts';
import { DomainError } from '../../errors.ts';
import { openAnomalies } from '../../meters/anomalies.ts';
import { CONSUMPTION_DAYS, monthlyConsumption } from '../../meters/consumption.ts';
import { HISTORY_MAX_LIMIT, meterHistory } from '../../meters/history.ts';
import { METER_LIST_MAX_LIMIT, meterList } from '../../meters/meter-list.ts';
import { meterWaitingForReview } from '../../meters/review.ts';
import { METER_ID_PATTERN } from '../../pipeline/identify-meter.ts';
import { accountId } from '../../plugins/app/session.ts';

type MetersQuery = { Querystring: { prefix?: string; after?: string } };

/**
 * /dashboard/meters: every physical meter of the account with its last trusted reading, recent
 * consumption, submissions waiting for review and whether it needs a visit; /dashboard/meters/:meterId:
 * one meter's open anomaly episodes, submissions waiting for review, latest submissions, its chart and
 * its consumption per month.
 */
export default async function meterRoutes(app: FastifyInstance): Promise<void> {
  const { db } = app.deps;

  app.get<MetersQuery>('/meters', async (request, reply) => {
    const meterIdOrUndefined = (value: string | undefined) => (value && METER_ID_PATTERN.test(value) ? value : undefined);
    const prefix = meterIdOrUndefined(request.query.prefix);
    const after = meterIdOrUndefined(request.query.after);
    const { meters, nextCursor } = await meterList(db, accountId(request), { limit: METER_LIST_MAX_LIMIT, prefix, startingAfter: after });
    const query = (cursor: string | undefined) =>
      `/dashboard/meters?${new URLSearchParams({ ...(prefix ? { prefix } : {}), ...(cursor ? { after: cursor } : {}) })}`;
    return reply.page('meters', {
      title: 'Meters',
      meters,
      prefix,
      days: CONSUMPTION_DAYS,
      next: nextCursor && query(nextCursor),
      first: after && query(undefined),
    });
  });

  app.get<{ Params: { meterId: string } }>('/meters/:meterId', async (request, reply) => {
    const { meterId } = request.params;
    const history = METER_ID_PATTERN.test(meterId) ? await meterHistory(db, accountId(request), meterId, { limit: HISTORY_MAX_LIMIT }) : undefined;
    if (!history) throw new DomainError('not_found', 'meter_id', 'No meter with this id in your account.');
    return reply.page('meter', {
      title: `Meter ${meterId}`,
      section: 'meters',
      meterId,
      records: history.records,
      more: history.nextBefore !== null,
      chart: consumptionChart(history.records),
      months: await monthlyConsumption(db, history.meterPointId),
      anomalies: await openAnomalies(db, history.meterPointId),
      waitingForReview: await meterWaitingForReview(db, history.meterPointId),
    });
  });
}
