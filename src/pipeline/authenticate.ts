import { createHash } from 'node:crypto';
import type { Db } from '../db/database.ts';
import { ApiError } from '../errors.ts';

export const API_KEY_PATTERN = /^meterlens_live_[0-9a-f]{32}$/;
/** The word `Bearer`, exactly one space, the key. */
const BEARER = /^Bearer ([^ ]+)$/;

export interface AuthenticatedKey {
  keyId: string;
  accountId: string;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Step 1: the Authorization header names an active, undeleted key. Reads headers only. */
export async function authenticate(db: Db, authorization: string | undefined): Promise<AuthenticatedKey> {
  const key = BEARER.exec(authorization ?? '')?.[1];
  if (!key || !API_KEY_PATTERN.test(key)) throw invalidKey();
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'account_id'])
    .where('key_sha256', '=', hashApiKey(key))
    .where('status', '=', 'active')
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw invalidKey();
  return { keyId: row.id, accountId: row.account_id };
}

function invalidKey(): ApiError {
  return new ApiError(422, 'authorization', 'Invalid or inactive API key');
}
