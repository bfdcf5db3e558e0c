import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import type { ApiKeyStatus } from '../db/schema.ts';
import { DomainError, requireId, requireText } from '../errors.ts';
import { checkBound, lockAccount } from './account-bounds.ts';
import { hashApiKey, newApiKey } from './api-key-format.ts';
import { requireAccount } from './require-account.ts';

export const API_KEY_STATUSES: readonly ApiKeyStatus[] = ['active', 'inactive'];

/**
 * Keys an account may have that are not deleted, inactive ones included (they can be enabled again): one per app or
 * site, and some to rotate.
 */
export const API_KEYS_PER_ACCOUNT = 20;

/** A project name is a label for people, as long as the dashboard's field lets one type. */
export const PROJECT_NAME_MAX_LENGTH = 200;

/** What may be shown about a key after creation: never the key or its hash. */
export interface ApiKeySummary {
  id: string;
  accountId: string;
  projectName: string;
  status: ApiKeyStatus;
  /** The key's prefix and its first 4 hex digits. */
  displayPrefix: string;
  /** The last 4 hex digits. */
  displaySuffix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** The only time the key itself exists outside its holder's hands: it is stored as a SHA-256. */
export async function createApiKey(
  db: Db,
  input: { accountId: string | number; projectName: string; status?: ApiKeyStatus },
): Promise<{ id: string; key: string }> {
  const accountId = await requireAccount(db, input.accountId);
  const projectName = requireProjectName(input.projectName);
  const status = requireStatus(input.status ?? 'active');
  const { key, displayPrefix, displaySuffix } = newApiKey();
  return db.transaction().execute(async (tx) => {
    await lockAccount(tx, accountId);
    const { count } = await tx
      .selectFrom('api_keys')
      .select(sql<number>`count(*)::int`.as('count'))
      .where('account_id', '=', accountId)
      .where('deleted_at', 'is', null)
      .executeTakeFirstOrThrow();
    checkBound(
      count,
      API_KEYS_PER_ACCOUNT,
      'keys',
      `the account has ${API_KEYS_PER_ACCOUNT} API keys, the most it may have: delete one it no longer uses`,
    );
    const row = await tx
      .insertInto('api_keys')
      .values({
        account_id: accountId,
        project_name: projectName,
        status,
        key_sha256: hashApiKey(key),
        display_prefix: displayPrefix,
        display_suffix: displaySuffix,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return { id: row.id, key };
  });
}

/** The account's keys that are not deleted, oldest first. */
export async function listApiKeys(db: Db, accountId: string | number): Promise<ApiKeySummary[]> {
  return summaries(db).where('account_id', '=', requireId(accountId, 'account id')).orderBy('id').execute();
}

/** `accountId` limits the change to that account's keys; the operator CLI leaves it out. */
export async function setApiKeyStatus(
  db: Db,
  accountId: string | number | undefined,
  id: string | number,
  status: ApiKeyStatus,
): Promise<ApiKeySummary> {
  requireStatus(status);
  const updated = await scopedKey(db, accountId, id).set({ status }).returning('id').executeTakeFirst();
  if (!updated) throw keyNotFound(id);
  return summaries(db).where('id', '=', updated.id).executeTakeFirstOrThrow();
}

/** Soft delete: the row stays for the meters that name it, but the key no longer authenticates or lists. */
export async function deleteApiKey(db: Db, accountId: string | number | undefined, id: string | number): Promise<void> {
  const deleted = await scopedKey(db, accountId, id).set({ deleted_at: sql<Date>`now()` }).executeTakeFirst();
  if (deleted.numUpdatedRows === 0n) throw keyNotFound(id);
}

function summaries(db: Db) {
  return db
    .selectFrom('api_keys')
    .select([
      'id',
      'account_id as accountId',
      'project_name as projectName',
      'status',
      'display_prefix as displayPrefix',
      'display_suffix as displaySuffix',
      'created_at as createdAt',
      'last_used_at as lastUsedAt',
    ])
    .where('deleted_at', 'is', null);
}

function scopedKey(db: Db, accountId: string | number | undefined, id: string | number) {
  let query = db.updateTable('api_keys').where('id', '=', requireId(id, 'key id')).where('deleted_at', 'is', null);
  if (accountId !== undefined) query = query.where('account_id', '=', requireId(accountId, 'account id'));
  return query;
}

function requireProjectName(value: string): string {
  const projectName = requireText(value, 'project name');
  if (projectName.length > PROJECT_NAME_MAX_LENGTH) {
    throw new DomainError(
      'invalid',
      'project name',
      `project name must be at most ${PROJECT_NAME_MAX_LENGTH} characters`,
    );
  }
  return projectName;
}

function requireStatus(status: ApiKeyStatus): ApiKeyStatus {
  if (!API_KEY_STATUSES.includes(status)) {
    throw new DomainError(
      'invalid',
      'key status',
      `key status must be ${API_KEY_STATUSES.join(' or ')}, got "${status}"`,
    );
  }
  return status;
}

function keyNotFound(id: string | number): DomainError {
  return new DomainError('not_found', 'key id', `no API key with id ${id}`);
}
