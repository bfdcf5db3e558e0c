import { sql } from 'kysely';
import type { Db, Tx } from '../db/database.ts';
import type { UserRole } from '../db/schema.ts';
import { DomainError, requireId } from '../errors.ts';
import type { Mailer } from '../mail.ts';
import { lockAccount } from './account-bounds.ts';
import { expiresIn, type LinkRefusals, linkWithToken, openLink, useLink } from './one-time-links.ts';
import { hashPassword, requireNewPassword } from './passwords.ts';
import { hashToken, randomToken } from './tokens.ts';
import { findUserByEmail, insertUser, requireEmail } from './users.ts';

export const INVITATION_DAYS = 7;
/** The dashboard page an invitation link opens. */
export const INVITATION_PATH = '/dashboard/invitation';
/** Invitations an account may send a day, withdrawn ones included: an account cannot make us spam. */
export const MAX_INVITATIONS_PER_DAY = 20;

export interface PendingInvitation {
  id: string;
  email: string;
  createdAt: Date;
  expiresAt: Date;
}

/** Owners invite and remove people; members use the account (keys, webhooks, readings) but may not. */
export function requireOwner(user: { role: UserRole }): void {
  if (user.role !== 'owner')
    throw new DomainError('refused', 'team', 'Only an owner of the account can invite or remove people.');
}

/** Invitations not yet accepted, withdrawn or expired, newest first. */
export async function listPendingInvitations(db: Db, accountId: string): Promise<PendingInvitation[]> {
  return db
    .selectFrom('invitations')
    .select(['id', 'email', 'created_at as createdAt', 'expires_at as expiresAt'])
    .where('account_id', '=', accountId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .orderBy('id', 'desc')
    .execute();
}

/**
 * A one-time link that makes `email` a member of the account, valid INVITATION_DAYS. An email
 * that already has a user is refused: a person signs in to one account. Inviting an address
 * again withdraws its earlier link. With a mailer the link is also mailed; `mailed` says whether
 * that worked (the caller shows the link either way, this once).
 */
export async function inviteColleague(
  deps: { db: Db; mailer: Mailer | undefined },
  input: { accountId: string; invitedBy: string; email: string; acceptUrl: URL },
): Promise<{ email: string; link: string; mailed: boolean }> {
  const email = requireEmail(input.email);
  const token = randomToken();
  const accountName = await deps.db.transaction().execute(async (tx) => {
    await lockAccount(tx, input.accountId);
    // Else each unverified sign-up could mail strangers, in an account name of its choosing.
    if (await awaitsVerification(tx, input.accountId)) {
      throw new DomainError(
        'refused',
        'email',
        'Verify your email address first: follow the link we mailed you, then invite your colleagues',
      );
    }
    const existing = await findUserByEmail(tx, email);
    if (existing) {
      throw new DomainError(
        'invalid',
        'email',
        existing.accountId === input.accountId
          ? `${existing.email} is already on your team`
          : `${email} already signs in to another Meterlens account; a person belongs to one account, so invite another address`,
      );
    }
    const sent = await tx
      .selectFrom('invitations')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('account_id', '=', input.accountId)
      .where('created_at', '>', sql<Date>`now() - interval '1 day'`)
      .executeTakeFirstOrThrow();
    if (sent.n >= MAX_INVITATIONS_PER_DAY) {
      throw new DomainError(
        'refused',
        'email',
        `This account has sent ${MAX_INVITATIONS_PER_DAY} invitations in the last day, the most it may. Try again tomorrow.`,
        {
          status: 429,
        },
      );
    }
    await pendingFor(tx, input.accountId)
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .set({ used_at: sql<Date>`now()` })
      .execute();
    await tx
      .insertInto('invitations')
      .values({
        account_id: input.accountId,
        email,
        invited_by: input.invitedBy,
        token_sha256: hashToken(token),
        expires_at: expiresIn(INVITATION_DAYS * 24),
      })
      .execute();
    const account = await tx
      .selectFrom('accounts')
      .select('name')
      .where('id', '=', input.accountId)
      .executeTakeFirstOrThrow();
    return account.name;
  });
  const link = linkWithToken(input.acceptUrl, token);
  if (!deps.mailer) return { email, link, mailed: false };
  const mailed = await deps.mailer
    .send({
      to: email,
      subject: `You are invited to ${accountName} on Meterlens`,
      text: [
        `You are invited to join ${accountName} on Meterlens. Follow this link to choose your password:`,
        '',
        link,
        '',
        `The link works once, within ${INVITATION_DAYS} days. If you did not expect this invitation, ignore this mail.`,
      ].join('\n'),
    })
    .then(
      () => true,
      () => false,
    );
  return { email, link, mailed };
}

/** An owner withdraws an invitation: its link then works no more. */
export async function withdrawInvitation(db: Db, accountId: string, invitationId: string): Promise<void> {
  const result = await pendingFor(db, accountId)
    .where('id', '=', requireId(invitationId, 'invitation', invitationGone))
    .set({ used_at: sql<Date>`now()` })
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw invitationGone();
}

const invitationGone = () =>
  new DomainError('not_found', 'invitation', 'This invitation was already accepted, withdrawn, or has expired.');
const notOnTeam = () => new DomainError('not_found', 'user', 'This person is not on your team.');

/** What the invitation page shows before the password is chosen; refused like acceptInvitation. */
export async function openInvitation(db: Db, token: string): Promise<{ email: string; accountName: string }> {
  const id = await openLink(db, 'invitations', token, INVITATION_REFUSALS);
  return db
    .selectFrom('invitations as i')
    .innerJoin('accounts as a', 'a.id', 'i.account_id')
    .select(['i.email', 'a.name as accountName'])
    .where('i.id', '=', id)
    .executeTakeFirstOrThrow();
}

/** The invited person chooses a password and becomes a member; the link is used up. */
export async function acceptInvitation(
  db: Db,
  input: { token: string; password: string; passwordConfirmation: string },
): Promise<{ userId: string }> {
  // A token that opens nothing costs no hashing: this page is open to anyone.
  await openLink(db, 'invitations', input.token, INVITATION_REFUSALS);
  const passwordHash = await hashPassword(requireNewPassword(input.password, input.passwordConfirmation));
  return db.transaction().execute(async (tx) => {
    const id = await useLink(tx, 'invitations', input.token, INVITATION_REFUSALS);
    const invitation = await tx
      .selectFrom('invitations')
      .select(['account_id', 'email'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const user = await insertUser(tx, {
      accountId: invitation.account_id,
      email: invitation.email,
      passwordHash,
      role: 'member',
    });
    return { userId: user.id };
  });
}

/**
 * An owner removes a colleague: the user is deleted and with it every session, so they are
 * signed out at once. The API keys they made stay: they belong to the account.
 */
export async function removeColleague(
  db: Db,
  input: { accountId: string; removedBy: string; userId: string },
): Promise<{ email: string }> {
  if (input.userId === input.removedBy)
    throw new DomainError('invalid', 'user', 'You cannot remove yourself. Ask another owner to.');
  const removed = await db
    .deleteFrom('users')
    .where('id', '=', requireId(input.userId, 'user', notOnTeam))
    .where('account_id', '=', input.accountId)
    .returning('email')
    .executeTakeFirst();
  if (!removed) throw notOnTeam();
  return removed;
}

function pendingFor(db: Db, accountId: string) {
  return db.updateTable('invitations').where('account_id', '=', accountId).where('used_at', 'is', null);
}

const INVITATION_REFUSALS: LinkRefusals = {
  invalid: 'This invitation link is not valid. Copy the whole link, or ask for a new invitation.',
  used: 'This invitation has already been accepted or was withdrawn. Sign in, or ask for a new invitation.',
  expired: `This invitation has expired (invitations work for ${INVITATION_DAYS} days). Ask for a new one.`,
};

/** The account's trial still waits for a self-signed-up owner to verify their email. */
async function awaitsVerification(tx: Tx, accountId: string): Promise<boolean> {
  const account = await tx
    .selectFrom('accounts')
    .select('trial_plan_code')
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  return account.trial_plan_code !== null;
}
