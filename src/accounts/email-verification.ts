import { sql } from 'kysely';
import type { PgBoss } from 'pg-boss';
import type { Db } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import type { Mailer } from '../mail.ts';
import { applySubscriptionChange } from './subscriptions.ts';
import { expiresIn, linkWithToken, type LinkRefusals, useLink } from './one-time-links.ts';
import { hashToken, randomToken } from './tokens.ts';

export const VERIFICATION_LINK_HOURS = 24;
/** Mails per user per hour, the one sent at sign-up included: "send it again" cannot spam an inbox. */
export const MAX_VERIFICATION_MAILS_PER_HOUR = 3;

/**
 * Mails the user a link that verifies their email: a new random token, stored as its SHA-256,
 * valid once for VERIFICATION_LINK_HOURS, in a link to `verifyUrl`.
 * Refused past the hourly limit; `unavailable` when the mail cannot be handed over (the token
 * then still counts against the limit, so a failing server is not hammered).
 */
export async function sendVerificationMail(
  deps: { db: Db; mailer: Mailer },
  input: { userId: string; verifyUrl: URL },
): Promise<void> {
  const token = randomToken();
  const email = await deps.db.transaction().execute(async (tx) => {
    const user = await tx
      .selectFrom('users')
      .select('email')
      .where('id', '=', input.userId)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const sent = await tx
      .selectFrom('email_verifications')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('user_id', '=', input.userId)
      .where('created_at', '>', sql<Date>`now() - interval '1 hour'`)
      .executeTakeFirstOrThrow();
    if (sent.n >= MAX_VERIFICATION_MAILS_PER_HOUR) {
      throw new DomainError(
        'refused',
        'email',
        `${MAX_VERIFICATION_MAILS_PER_HOUR} mails were sent in the last hour. Check your spam folder, or try again later.`,
        {
          status: 429,
        },
      );
    }
    await tx
      .insertInto('email_verifications')
      .values({ user_id: input.userId, token_sha256: hashToken(token), expires_at: expiresIn(VERIFICATION_LINK_HOURS) })
      .execute();
    return user.email;
  });
  await deps.mailer.send({
    to: email,
    subject: 'Verify your email for Meterlens',
    text: [
      'Follow this link to verify your email address and start your account:',
      '',
      linkWithToken(input.verifyUrl, token),
      '',
      `The link works once, within ${VERIFICATION_LINK_HOURS} hours. If you did not sign up for Meterlens, ignore this mail.`,
    ].join('\n'),
  });
}

/**
 * Follows a verification link: marks the token used and the user's email verified and, if the
 * account awaits it, starts its trial (announced to its webhook endpoints), all in one
 * transaction. The token row is locked, so a link followed twice at once works only once.
 */
export async function verifyEmail(deps: { db: Db; boss: PgBoss }, token: string): Promise<{ trialStarted: boolean }> {
  return deps.db.transaction().execute(async (tx) => {
    const verificationId = await useLink(tx, 'email_verifications', token, VERIFICATION_REFUSALS);
    const user = await tx
      .updateTable('users')
      .set({ email_verified_at: sql<Date>`coalesce(email_verified_at, now())` })
      .where('id', '=', (eb) => eb.selectFrom('email_verifications').select('user_id').where('id', '=', verificationId))
      .returning('account_id')
      .executeTakeFirstOrThrow();
    const account = await tx
      .selectFrom('accounts as a')
      .leftJoin('subscriptions as s', 's.account_id', 'a.id')
      .select(['a.trial_plan_code', 's.account_id as subscribed'])
      .where('a.id', '=', user.account_id)
      .forUpdate('a')
      .executeTakeFirstOrThrow();
    if (account.trial_plan_code === null) return { trialStarted: false };
    await tx.updateTable('accounts').set({ trial_plan_code: null }).where('id', '=', user.account_id).execute();
    // A plan the operator set meanwhile (`subscriptions set`) is not replaced by the trial.
    if (account.subscribed !== null) return { trialStarted: false };
    await applySubscriptionChange(tx, deps.boss, {
      action: 'set',
      accountId: user.account_id,
      planCode: account.trial_plan_code,
      months: 1,
    });
    return { trialStarted: true };
  });
}

const VERIFICATION_REFUSALS: LinkRefusals = {
  invalid: 'This link is not valid. Copy the whole link from the mail, or sign in and send a new one.',
  used: 'This link has already been used. Sign in: if your email is not verified yet, send a new link.',
  expired: `This link has expired (links work for ${VERIFICATION_LINK_HOURS} hours). Sign in and send a new one.`,
};
