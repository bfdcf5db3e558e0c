import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../errors.ts';
import { acceptedSubmissions } from '../../metrics.ts';
import { authenticate, type AuthenticatedKey } from '../../pipeline/authenticate.ts';
import { checkSubscription, type ActivePlan } from '../../pipeline/check-subscription.ts';
import { checkUsage } from '../../pipeline/check-usage.ts';
import { persistAndEnqueue } from '../../pipeline/persist-and-enqueue.ts';
import { ReadFailure } from '../../pipeline/read.ts';
import { recordFailure, recordReading, type MeterRef } from '../../pipeline/record.ts';
import { validateImage } from '../../pipeline/validate-image.ts';
import { AcceptedMeterResponse, CompletedReadingResponse } from '../../schemas/meter-reading.ts';

declare module 'fastify' {
  interface FastifyRequest {
    submitter: { key: AuthenticatedKey; plan: ActivePlan } | null;
  }
}

/** Seconds a client should wait before retrying when no reader can be reached. */
const RETRY_AFTER_SECONDS = 30;

const meterReadingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, boss, config, readers } = app.deps;
  app.decorateRequest('submitter', null);

  // Steps 1–3 run on the headers alone, before a byte of the upload is read.
  app.addHook('onRequest', async (request) => {
    const key = await authenticate(db, request.headers.authorization);
    const plan = await checkSubscription(db, key.accountId);
    await checkUsage(db, key.accountId, plan);
    request.submitter = { key, plan };
  });

  app.post('/meter-reading', { schema: { response: { 202: AcceptedMeterResponse } } }, async (request, reply) => {
    const image = await validateImage(request, config);
    const accepted = await persistAndEnqueue({ db, boss }, { ...submitter(request), image, mode: 'async' });
    acceptedSubmissions.inc({ mode: 'async' });
    return reply.code(202).send({ reference_id: accepted.referenceId, status: 'pending' as const });
  });

  app.post('/meter-reading/sync', { schema: { response: { 200: CompletedReadingResponse } } }, async (request) => {
    const { key, plan } = submitter(request);
    const image = await validateImage(request, config);
    const accepted = await persistAndEnqueue({ db, boss }, { key, plan, image, mode: 'sync' });
    acceptedSubmissions.inc({ mode: 'sync' });
    const meter: MeterRef = { ...accepted, accountId: key.accountId, mode: 'sync' };
    let result;
    try {
      result = await readers.read(image.jpeg);
    } catch (error) {
      const reason = error instanceof ReadFailure
        ? { code: error.code, message: error.message }
        : { code: 'internal_error', message: 'The reading failed unexpectedly' };
      await recordFailure({ db, boss }, meter, reason);
      throw syncReadError(reason, accepted.referenceId, error);
    }
    const readingId = await recordReading({ db, boss }, meter, result);
    if (!readingId) throw new Error(`meter ${accepted.meterId} finished while it was being read`);
    return {
      reference_id: accepted.referenceId,
      status: 'completed' as const,
      reading: result.reading,
      value: result.value,
      confidence: result.confidence,
      escalated: result.escalated,
      model: result.model,
      reading_id: Number(readingId),
    };
  });
};

export default meterReadingRoutes;

function submitter(request: FastifyRequest): NonNullable<FastifyRequest['submitter']> {
  if (!request.submitter) throw new Error('the onRequest pipeline did not run');
  return request.submitter;
}

function syncReadError(reason: { code: string; message: string }, referenceId: string, cause: unknown): Error {
  const extra = { reference_id: referenceId, status: 'failed' };
  switch (reason.code) {
    case 'unreadable':
      return new ApiError(422, 'image', reason.message, { extra });
    case 'readers_unavailable':
      return new ApiError(503, 'reader', reason.message, { extra, headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } });
    default:
      return cause instanceof Error ? cause : new Error(String(cause));
  }
}
