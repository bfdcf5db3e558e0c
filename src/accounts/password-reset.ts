import { sql } from 'kysely';
import type { Db } from '../db/database.ts';
import { DomainError } from '../errors.ts';
import type { Mailer } from '../mail.ts';
import { reserveAttempt } from './attempt-limits.ts';
import { expiresIn, type LinkRefusals, linkWithToken, openLink, useLink } from './one-time-links.ts';
import { hashPassword, requireNewPassword } from './passwords.ts';
import { hashToken, randomToken } from './tokens.ts';
import { changePassword, findUserByEmail, requireEmail } from './users.ts';

export const RESET_LINK_HOURS = 1;
/** The dashboard page a reset link opens. */
export const RESET_PASSWORD_PATH = '/dashboard/reset-password';
const REQUEST_WINDOW_MINUTES = 60;
export const MAX_RESET_REQUESTS_PER_EMAIL = 3;
export const MAX_RESET_REQUESTS_PER_IP = 10;

/**
 * Counts a "Forgot password" request against the email as typed (whether or not a user has it)
 * and against the client address, or refuses it (429) past either limit. Nothing here depends on
 * whether the email has a user: the answer and its timing are the same either way.
 */
export async function reserveResetRequest(db: Db, input: { email: string; ip: string }): Promise<void> {
  await reserveAttempt(db, {
    table: 'password_reset_requests',
    email: requireEmail(input.email).toLowerCase(),
    ip: input.ip,
    windowMinutes: REQUEST_WINDOW_MINUTES,
    maxPerEmail: MAX_RESET_REQUESTS_PER_EMAIL,
    maxPerIp: MAX_RESET_REQUESTS_PER_IP,
    refused: () =>
      new DomainError(
        'refused',
        'email',
        `Too many requests for a reset link. Try again in ${REQUEST_WINDOW_MINUTES} minutes.`,
        { status: 429 },
      ),
  });
  await db
    .deleteFrom('password_reset_requests')
    .where('attempted_at', '<', sql<Date>`now() - make_interval(mins => ${REQUEST_WINDOW_MINUTES})`)
    .execute();
}

/**
 * A one-time link to `resetUrl` that sets a new password for the user with this email, valid
 * RESET_LINK_HOURS; undefined when no user has the email. `meterlens users reset-link` prints it.
 */
export async function createResetLink(
  db: Db,
  input: { email: string; resetUrl: URL },
): Promise<{ email: string; link: string } | undefined> {
  const user = await findUserByEmail(db, input.email);
  if (!user) return undefined;
  const token = randomToken();
  await db
    .insertInto('password_resets')
    .values({ user_id: user.id, token_sha256: hashToken(token), expires_at: expiresIn(RESET_LINK_HOURS) })
    .execute();
  return { email: user.email, link: linkWithToken(input.resetUrl, token) };
}

/** Mails the link when the email has a user; otherwise sends nothing (the caller has already answered). */
export async function mailResetLink(
  deps: { db: Db; mailer: Mailer },
  input: { email: string; resetUrl: URL },
): Promise<void> {
  const reset = await createResetLink(deps.db, input);
  if (!reset) return;
  await deps.mailer.send({
    to: reset.email,
    subject: 'Reset your Meterlens password',
    text: [
      'Someone asked to reset the password of your Meterlens account. Follow this link to choose a new one:',
      '',
      reset.link,
      '',
      `The link works once, within ${RESET_LINK_HOURS} hour. If you did not ask for it, ignore this mail: your password stays as it is.`,
    ].join('\n'),
  });
}

/** Refused as resetPassword would refuse it, so the page says so before a password is typed. */
export async function openResetLink(db: Db, token: string): Promise<void> {
  await openLink(db, 'password_resets', token, RESET_REFUSALS);
}

/** Sets the new password; every session of the user ends (users.changePassword). */
export async function resetPassword(
  db: Db,
  input: { token: string; password: string; passwordConfirmation: string },
): Promise<{ userId: string }> {
  // A token that opens nothing costs no hashing: this page is open to anyone.
  await openResetLink(db, input.token);
  const passwordHash = await hashPassword(requireNewPassword(input.password, input.passwordConfirmation));
  return db.transaction().execute(async (tx) => {
    const id = await useLink(tx, 'password_resets', input.token, RESET_REFUSALS);
    const { user_id: userId } = await tx
      .selectFrom('password_resets')
      .select('user_id')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    await changePassword(tx, userId, passwordHash);
    return { userId };
  });
}

const RESET_REFUSALS: LinkRefusals = {
  invalid: 'This link is not valid. Copy the whole link from the mail, or ask for a new one.',
  used: 'This link has already been used. Sign in, or ask for a new link.',
  expired: `This link has expired (reset links work for ${RESET_LINK_HOURS} hour). Ask for a new one.`,
};
