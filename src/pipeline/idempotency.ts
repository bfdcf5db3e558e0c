import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { DomainError, type ErrorKind } from '../errors.ts';
import { UPLOAD_TEXT_FIELDS, type Upload } from './validate-image.ts';

const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** How long a key's response is replayed (Stripe's 24 hours). */
const IDEMPOTENCY_KEY_HOURS = 24;
/** 1–255 printable ASCII characters, as Stripe allows. */
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;
/** A claim still running after this is a crashed process's, and may be taken over. */
const ABANDONED_AFTER_SECONDS = 600;
/** How long a concurrent retry waits for the first request's answer before a 409. */
const WAIT_FOR_FIRST_MS = 20_000;
/** Response headers a replay repeats. */
const REPLAYED_HEADERS = ['location', 'retry-after'];

/**
 * A key row a new request may take over: past its 24 hours, or a first request that never answered (a crashed process).
 */
const claimable = sql<boolean>`(idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_KEY_HOURS})
  OR (idempotency_keys.status_code IS NULL AND idempotency_keys.created_at < now() - make_interval(secs => ${ABANDONED_AFTER_SECONDS})))`;

interface Claim {
  accountId: string;
  key: string;
}

/** What makes a request the same request (columns request_sha256 and fields_sha256). */
interface Fingerprint {
  routeAndUpload: string;
  /** The SHA-256 of each text field as sent, or null for one not sent. */
  fields: Record<string, string | null>;
}

interface StoredResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyClaim: Claim | null;
  }
}

/**
 * Registered in the routes that honour `Idempotency-Key`: the response of a request that claimed
 * a key is stored for its retries when that request counted a submission (a 2xx, or a sync 422 that
 * names the submission whose photo could not be read); otherwise nothing was counted (nothing stored,
 * or a failure of the service's own, given back by recordFailure), and the key is released so that a
 * retry is read.
 */
export function idempotentResponses(app: FastifyInstance): void {
  const { db } = app.deps;
  app.decorateRequest('idempotencyClaim', null);
  app.addHook('onSend', async (request, reply, payload) => {
    const claim = request.idempotencyClaim;
    if (!claim) return payload;
    request.idempotencyClaim = null;
    const body = typeof payload === 'string' ? payload : '';
    if (countedSubmission(reply.statusCode, body)) await storeResponse(db, claim, reply, body);
    else await releaseClaim(db, claim);
    return payload;
  });
}

/**
 * The `Idempotency-Key` header, checked from the headers alone: undefined when there is none; one
 * that is not 1–255 printable ASCII characters is a 422 `idempotency`.
 */
export function idempotencyKey(request: FastifyRequest): string | undefined {
  const key = request.headers[IDEMPOTENCY_KEY_HEADER];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
    throw idempotencyError('invalid', 'The Idempotency-Key header must be 1 to 255 printable ASCII characters');
  }
  return key;
}

/**
 * Whether a request with this key may be a retry: the key holds a stored answer, or a first request
 * still running. A new request could not claim it; only its upload says whether it is the same request.
 */
export async function isKeyTaken(db: Db, accountId: string, key: string): Promise<boolean> {
  const taken = await db
    .selectFrom('idempotency_keys')
    .select('idempotency_key')
    .where('account_id', '=', accountId)
    .where('idempotency_key', '=', key)
    .where(sql<boolean>`NOT ${claimable}`)
    .executeTakeFirst();
  return taken !== undefined;
}

/**
 * Before the work of a POST: without an `Idempotency-Key` nothing happens. With one, the first
 * request claims the key and goes on; a retry gets the stored response (waiting while the first
 * is still running), with `Idempotent-Replayed: true`. Returns true when it replayed: the reply is sent.
 * The same key with another route, upload or text field is a 422 `idempotency` naming what differs.
 */
export async function replayOrClaim(
  db: Db,
  request: FastifyRequest,
  reply: FastifyReply,
  accountId: string,
  upload: Upload,
): Promise<boolean> {
  const key = idempotencyKey(request);
  if (key === undefined) return false;
  const claim = { accountId, key };
  const fingerprint = requestFingerprint(request.routeOptions.url ?? request.url, upload);
  const deadline = Date.now() + WAIT_FOR_FIRST_MS;
  for (let pause = 25; ; pause = Math.min(pause * 2, 250)) {
    if (await claimKey(db, claim, fingerprint)) {
      request.idempotencyClaim = claim;
      return false;
    }
    const existing = await db
      .selectFrom('idempotency_keys')
      .select(['request_sha256', 'fields_sha256', 'status_code', 'response_headers', 'response_body'])
      .where('account_id', '=', accountId)
      .where('idempotency_key', '=', key)
      .executeTakeFirst();
    const differences = existing ? differingParts(existing, fingerprint) : [];
    if (differences.length > 0) {
      const verb = differences.length > 1 ? 'differ' : 'differs';
      throw idempotencyError(
        'invalid',
        `This Idempotency-Key was used with another request: ${differences.join(', ')} ${verb}`,
      );
    }
    if (existing?.status_code != null && existing.response_body !== null) {
      // Not the reply itself: a FastifyReply is a thenable, which an async function would await.
      replay(reply, {
        statusCode: existing.status_code,
        headers: existing.response_headers ?? {},
        body: existing.response_body,
      });
      return true;
    }
    if (Date.now() > deadline) {
      throw idempotencyError('conflict', 'A request with this Idempotency-Key is still being processed; retry later');
    }
    await sleep(pause);
  }
}

/** Deletes keys past their 24 hours; the worker runs it every minute. */
export async function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
  const purged = await db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', sql<Date>`now() - make_interval(hours => ${IDEMPOTENCY_KEY_HOURS})`)
    .executeTakeFirst();
  return Number(purged.numDeletedRows);
}

function requestFingerprint(route: string, upload: Upload): Fingerprint {
  const fields = Object.fromEntries(
    UPLOAD_TEXT_FIELDS.map((name) => [name, upload.fields[name] === undefined ? null : sha256(upload.fields[name])]),
  );
  return { routeAndUpload: createHash('sha256').update(route).update('\0').update(upload.image).digest('hex'), fields };
}

/**
 * The parts of the stored request that the new one changes. A key claimed before its fields were recorded compares
 * route and upload only.
 */
function differingParts(
  stored: { request_sha256: string; fields_sha256: Record<string, string | null> | null },
  fingerprint: Fingerprint,
): string[] {
  const parts = stored.request_sha256 === fingerprint.routeAndUpload ? [] : ['image or endpoint'];
  const storedFields = stored.fields_sha256;
  if (!storedFields) return parts;
  return [...parts, ...UPLOAD_TEXT_FIELDS.filter((name) => (storedFields[name] ?? null) !== fingerprint.fields[name])];
}

/** One statement, so two concurrent requests cannot both claim: a new key, or a claimable one. */
async function claimKey(db: Db, claim: Claim, fingerprint: Fingerprint): Promise<boolean> {
  const claimed = await sql`
    INSERT INTO idempotency_keys (account_id, idempotency_key, request_sha256, fields_sha256)
    VALUES (${claim.accountId}, ${claim.key}, ${fingerprint.routeAndUpload}, ${JSON.stringify(fingerprint.fields)}::jsonb)
    ON CONFLICT (account_id, idempotency_key) DO UPDATE
      SET request_sha256 = excluded.request_sha256, fields_sha256 = excluded.fields_sha256, created_at = now(),
          status_code = NULL, response_headers = NULL, response_body = NULL
      WHERE ${claimable}
    RETURNING 1`.execute(db);
  return claimed.rows.length > 0;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function countedSubmission(statusCode: number, body: string): boolean {
  if (statusCode >= 200 && statusCode < 300) return true;
  if (statusCode >= 500) return false;
  try {
    return typeof JSON.parse(body).reference_id === 'string';
  } catch {
    return false;
  }
}

async function storeResponse(db: Db, claim: Claim, reply: FastifyReply, body: string): Promise<void> {
  const headers = Object.fromEntries(
    REPLAYED_HEADERS.flatMap((name) => (reply.hasHeader(name) ? [[name, String(reply.getHeader(name))]] : [])),
  );
  await db
    .updateTable('idempotency_keys')
    .set({ status_code: reply.statusCode, response_headers: JSON.stringify(headers), response_body: body })
    .where('account_id', '=', claim.accountId)
    .where('idempotency_key', '=', claim.key)
    .execute();
}

async function releaseClaim(db: Db, claim: Claim): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('account_id', '=', claim.accountId)
    .where('idempotency_key', '=', claim.key)
    .execute();
}

function replay(reply: FastifyReply, stored: StoredResponse): void {
  reply
    .code(stored.statusCode)
    .headers({ ...stored.headers, 'idempotent-replayed': 'true', 'content-type': 'application/json; charset=utf-8' })
    .send(stored.body);
}

function idempotencyError(kind: ErrorKind, message: string): DomainError {
  return new DomainError(kind, 'idempotency', message);
}
