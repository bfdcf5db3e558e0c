import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyRequest } from 'fastify';
import { DomainError } from '../../errors.ts';
import { acceptedSubmissions } from '../../metrics.ts';
import { authenticate, type AuthenticatedKey } from '../../pipeline/authenticate.ts';
import { checkSubscription, type ActivePlan } from '../../pipeline/check-subscription.ts';
import { checkUsage } from '../../pipeline/check-usage.ts';
import { identifyMeter } from '../../pipeline/identify-meter.ts';
import { idempotencyKey, idempotentResponses, isKeyTaken, replayOrClaim } from '../../pipeline/idempotency.ts';
import { persistAndEnqueue, withdrawSubmission } from '../../pipeline/persist-and-enqueue.ts';
import { readContext } from '../../pipeline/expect-reading.ts';
import { readPhoto } from '../../pipeline/read.ts';
import { freshReadingResult } from '../../pipeline/reading-result.ts';
import { recordFailure, recordReading, type SubmissionRef } from '../../pipeline/record.ts';
import { discardRestOfBody, notMultipart, validateImage } from '../../pipeline/validate-image.ts';
import { isPhotoStoreUnavailable } from '../../photos/store.ts';
import { ReadFailure } from '../../readers/chain.ts';
import { AsyncSubmission, SyncSubmission } from '../../schemas/meter-reading.ts';
import { requireIdentityEncoding } from './body.ts';

declare module 'fastify' {
  interface FastifyRequest {
    submitter: { key: AuthenticatedKey; plan: ActivePlan } | null;
  }
}

/** Seconds a client should wait before retrying when no reader can be reached. */
const RETRY_AFTER_SECONDS = 30;

const meterReadingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, photos, boss, config, readers } = app.deps;
  app.decorateRequest('submitter', null);
  idempotentResponses(app);

  // Steps 1–3 and the upload's Content-Encoding are checked on the headers alone: a refused request is answered
  // before a byte of its upload is read, or sent by a client that waits for `100 Continue`
  // (plugins/app/expect-continue.ts).
  app.addHook('onRequest', async (request) => {
    try {
      const key = await authenticate(db, request.headers.authorization);
      const plan = checkSubscription(key.subscription);
      const retryKey = idempotencyKey(request);
      // A retry of an accepted request is answered from its key's stored response, which a used-up
      // quota must not refuse; only its upload says whether it is that retry.
      await checkUsage(
        key.monthlyUsage,
        plan,
        async () => retryKey !== undefined && (await isKeyTaken(db, key.accountId, retryKey)),
      );
      requireIdentityEncoding(request, 'the photo');
      request.submitter = { key, plan };
    } catch (error) {
      discardRestOfBody(request.raw);
      throw error;
    }
  });

  // A body that is not multipart reaches the route unread, to be refused as a 422 `image` like
  // any other malformed upload (and discarded) rather than parsed or answered 415 by Fastify.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('*', (_request, _body, done) => done(null));
  // A Content-Type that is not even a media type is refused by Fastify before any parser runs.
  app.setErrorHandler((error) => {
    throw (error as FastifyError).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? notMultipart() : error;
  });

  app.post('/meter-reading', { schema: AsyncSubmission }, async (request, reply) => {
    const { key, plan } = submitter(request);
    const { image, fields } = await validateImage(request, config);
    const identity = identifyMeter(fields);
    if (await replayOrClaim(db, request, reply, key.accountId, { image: image.upload, fields })) return reply;
    // One let through over the limit as a possible retry is new after all: refused before its upload is stored.
    await checkUsage(key.monthlyUsage, plan);
    const accepted = await persistAndEnqueue({ db, photos, boss }, { key, plan, image, identity, mode: 'async' });
    acceptedSubmissions.inc({ mode: 'async' });
    return reply
      .code(202)
      .header('location', `/api/meter-reading/${accepted.referenceId}`)
      .send({ reference_id: accepted.referenceId, status: 'pending' as const });
  });

  app.post('/meter-reading/sync', { schema: SyncSubmission }, async (request, reply) => {
    const { key, plan } = submitter(request);
    const { image, fields } = await validateImage(request, config);
    const identity = identifyMeter(fields);
    if (await replayOrClaim(db, request, reply, key.accountId, { image: image.upload, fields })) return reply;
    // One let through over the limit as a possible retry is new after all: refused before its upload is stored.
    await checkUsage(key.monthlyUsage, plan);
    const accepted = await persistAndEnqueue({ db, photos, boss }, { key, plan, image, identity, mode: 'sync' });
    acceptedSubmissions.inc({ mode: 'sync' });
    const submission: SubmissionRef = { ...accepted, accountId: key.accountId, mode: 'sync' };
    try {
      const context = await readContext(db, accepted.submissionId);
      const result = await readPhoto(
        { db, photos, config, readers },
        accepted.submissionId,
        { jpeg: null, upload: image.upload },
        context,
      );
      const stored = await recordReading({ db, boss, config }, submission, result, context);
      if (!stored) throw new Error(`submission ${accepted.submissionId} finished while it was being read`);
      return {
        reference_id: accepted.referenceId,
        status: 'completed' as const,
        ...freshReadingResult(stored, result, context),
      };
    } catch (error) {
      // Nothing was read: the bucket refused the upright JPEG. Taken back uncounted, answered as the bucket's 503.
      if (isPhotoStoreUnavailable(error) && (await withdrawSubmission(db, key.accountId, accepted))) throw error;
      // Failed, and uncounted unless the photo was the cause (recordFailure). With the database gone this throws
      // too: the submission then waits for expireStaleSubmissions, which fails it and gives its count back.
      const reason =
        error instanceof ReadFailure
          ? { code: error.code, message: error.message }
          : { code: 'internal_error', message: 'The reading failed unexpectedly' };
      await recordFailure({ db, boss }, submission, reason);
      throw syncReadError(reason, accepted.referenceId, error);
    }
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
    case 'invalid_image':
      return new DomainError('invalid', 'image', reason.message, { extra });
    case 'readers_unavailable':
      return new DomainError('unavailable', 'reader', reason.message, {
        extra,
        headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
      });
    default:
      return cause instanceof Error ? cause : new Error(String(cause));
  }
}
