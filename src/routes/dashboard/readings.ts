import type { FastifyInstance } from 'fastify';
import { NotFoundError } from '../../accounts/errors.ts';
import { METER_STATUSES, parseMeterStatus, readingDetail, readingPhoto, recentReadings } from '../../dashboard/readings.ts';
import { accountId } from '../../plugins/app/session.ts';

type ReadingParams = { Params: { referenceId: string } };

/** /dashboard/readings: recent submissions by status, and one submission with its photo. */
export default async function readingRoutes(app: FastifyInstance): Promise<void> {
  const { db } = app.deps;
  const notFound = () => new NotFoundError('No submission with this reference in your account.');

  app.get<{ Querystring: { status?: string } }>('/readings', async (request, reply) => {
    const status = parseMeterStatus(request.query.status);
    const readings = await recentReadings(db, accountId(request), status);
    return reply.page('readings', { title: 'Readings', readings, status, statuses: METER_STATUSES });
  });

  app.get<ReadingParams>('/readings/:referenceId', async (request, reply) => {
    const reading = await readingDetail(db, accountId(request), request.params.referenceId);
    if (!reading) throw notFound();
    return reply.page('reading', { title: 'Reading', section: 'readings', reading });
  });

  app.get<ReadingParams>('/readings/:referenceId/photo', async (request, reply) => {
    const jpeg = await readingPhoto(db, accountId(request), request.params.referenceId);
    if (!jpeg) throw notFound();
    return reply.type('image/jpeg').header('cache-control', 'private, max-age=3600').send(jpeg);
  });
}
