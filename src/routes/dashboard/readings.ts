import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  confirmAsUser,
  correctAsUser,
  METER_STATUSES,
  PLAUSIBILITIES,
  readingDetail,
  readingPhoto,
  type ReadingsQuery,
  readingsFilter,
  readingsPage,
  submissionNotFound,
} from '../../dashboard/readings.ts';
import { billingExport } from '../../meters/billing-export.ts';
import { accountId, signedInUser } from '../../plugins/app/session.ts';
import { ReadingCorrectionForm } from '../../schemas/dashboard-forms.ts';

type ReadingParams = { Params: { referenceId: string } };

/** /dashboard/readings: the account's submissions, filtered and a page at a time, and one submission with its photo. */
const readingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, photos } = app.deps;

  app.get<{ Querystring: ReadingsQuery }>('/readings', async (request, reply) => {
    const { filter, form } = readingsFilter(request.query);
    const after = request.query.after || undefined;
    const { readings, nextCursor, total } = await readingsPage(db, accountId(request), filter, after);
    const filtered = Object.values(form).some((value) => value !== undefined);
    const next =
      nextCursor && `/dashboard/readings?${new URLSearchParams(definedEntries({ ...form, after: nextCursor }))}`;
    const first = after && `/dashboard/readings?${new URLSearchParams(definedEntries(form))}`;
    const exportLink = `/dashboard/readings.csv?${new URLSearchParams(definedEntries(form))}`;
    return reply.page('readings', {
      title: 'Readings',
      readings,
      total,
      filtered,
      form,
      next,
      first,
      exportLink,
      statuses: METER_STATUSES,
      plausibilities: PLAUSIBILITIES,
    });
  });

  /** The billing export of the list's filter (docs/api.md, "The billing export"). */
  app.get<{ Querystring: ReadingsQuery }>('/readings.csv', async (request, reply) => {
    const { filter } = readingsFilter(request.query);
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', 'attachment; filename="meter-readings.csv"')
      .send(billingExport(db, accountId(request), filter));
  });

  app.get<ReadingParams>('/readings/:referenceId', async (request, reply) => {
    const reading = await readingDetail(db, accountId(request), request.params.referenceId);
    if (!reading) throw submissionNotFound();
    return reply.page('reading', {
      title: 'Reading',
      section: 'readings',
      reading,
      needsReview: reading.needsReview ?? undefined,
    });
  });

  app.post<ReadingParams & { Body: ReadingCorrectionForm }>(
    '/readings/:referenceId/correction',
    { schema: { body: ReadingCorrectionForm } },
    async (request, reply) => {
      await correctAsUser(app.deps, signedInUser(request), request.params.referenceId, request.body.reading);
      return reply.redirect(`/dashboard/readings/${request.params.referenceId}`, 303);
    },
  );

  app.post<ReadingParams>('/readings/:referenceId/confirmation', async (request, reply) => {
    await confirmAsUser(app.deps, signedInUser(request), request.params.referenceId);
    return reply.redirect(`/dashboard/readings/${request.params.referenceId}`, 303);
  });

  app.get<ReadingParams>('/readings/:referenceId/photo', async (request, reply) => {
    const jpeg = await readingPhoto({ db, photos }, accountId(request), request.params.referenceId);
    if (!jpeg) throw submissionNotFound();
    return reply.type('image/jpeg').header('cache-control', 'private, max-age=3600').send(jpeg);
  });
};

export default readingRoutes;

function definedEntries(values: Record<string, string | undefined>): Array<[string, string]> {
  return Object.entries(values).filter((entry): entry is [string, string] => entry[1] !== undefined);
}
