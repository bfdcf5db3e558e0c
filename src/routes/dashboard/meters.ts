import type { FastifyInstance } from 'fastify';
import { consumptionChart } from '../../dashboard/consumption-chart.ts';
import { meterNotFound, setLayoutAsUser } from '../../dashboard/meter-layout.ts';
import { openAnomalies } from '../../meters/anomalies.ts';
import { CONSUMPTION_DAYS, monthlyConsumption } from '../../meters/consumption.ts';
import { HISTORY_MAX_LIMIT, meterHistory } from '../../meters/history.ts';
import { METER_LIST_MAX_LIMIT, meterList } from '../../meters/meter-list.ts';
import { FRACTIONAL_WHEELS_LIMIT, meterSettings, WHOLE_WHEELS_LIMIT } from '../../meters/meter-points.ts';
import { meterWaitingForReview } from '../../meters/review.ts';
import { METER_ID_PATTERN } from '../../pipeline/identify-meter.ts';
import { accountId } from '../../plugins/app/session.ts';
import { MeterLayoutForm } from '../../schemas/dashboard-forms.ts';

type MetersQuery = { Querystring: { prefix?: string; after?: string } };
type MeterParams = { Params: { meterId: string } };

/**
 * /dashboard/meters: every physical meter of the account with its last trusted reading, recent
 * consumption, submissions waiting for review and whether it needs a visit; /dashboard/meters/:meterId:
 * one meter's open anomaly episodes, its counter layout (set there too), submissions waiting for review,
 * latest submissions, its chart and its consumption per month.
 */
export default async function meterRoutes(app: FastifyInstance): Promise<void> {
  const { db } = app.deps;

  app.get<MetersQuery>('/meters', async (request, reply) => {
    const meterIdOrUndefined = (value: string | undefined) =>
      value && METER_ID_PATTERN.test(value) ? value : undefined;
    const prefix = meterIdOrUndefined(request.query.prefix);
    const after = meterIdOrUndefined(request.query.after);
    const { meters, nextCursor } = await meterList(db, accountId(request), {
      limit: METER_LIST_MAX_LIMIT,
      prefix,
      startingAfter: after,
    });
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

  app.get<MeterParams>('/meters/:meterId', async (request, reply) => {
    const { meterId } = request.params;
    const history = METER_ID_PATTERN.test(meterId)
      ? await meterHistory(db, accountId(request), meterId, { limit: HISTORY_MAX_LIMIT })
      : undefined;
    if (!history) throw meterNotFound();
    const { layout, effectiveLayout } = await meterSettings(db, history.meterPointId);
    return reply.page('meter', {
      title: `Meter ${meterId}`,
      section: 'meters',
      meterId,
      layout,
      effectiveLayout,
      wheelLimits: { whole: WHOLE_WHEELS_LIMIT, fraction: FRACTIONAL_WHEELS_LIMIT },
      records: history.records,
      more: history.nextBefore !== null,
      chart: consumptionChart(history.records),
      months: await monthlyConsumption(db, history.meterPointId),
      anomalies: await openAnomalies(db, history.meterPointId),
      waitingForReview: await meterWaitingForReview(db, history.meterPointId),
    });
  });

  /**
   * The counter layout its readings are judged in (README "PATCH /api/meters/{meter_id}"); `unset`: as its readings
   * show it.
   */
  const setLayout = async (meterId: string, account: string, form: MeterLayoutForm | null) => {
    if (!METER_ID_PATTERN.test(meterId)) throw meterNotFound();
    await setLayoutAsUser(db, account, meterId, form);
    return `/dashboard/meters/${encodeURIComponent(meterId)}`;
  };
  app.post<MeterParams & { Body: MeterLayoutForm }>(
    '/meters/:meterId/layout',
    { schema: { body: MeterLayoutForm } },
    async (request, reply) =>
      reply.redirect(await setLayout(request.params.meterId, accountId(request), request.body), 303),
  );
  app.post<MeterParams>('/meters/:meterId/layout/unset', async (request, reply) =>
    reply.redirect(await setLayout(request.params.meterId, accountId(request), null), 303),
  );
}
