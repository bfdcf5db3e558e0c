import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { createSession, deleteSession, findSession, type SessionUser } from '../../accounts/sessions.ts';

export const SESSION_COOKIE = 'meterlens_session';

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in dashboard user, or null. */
    user: SessionUser | null;
  }
  interface FastifyReply {
    signIn(userId: string): Promise<void>;
    signOut(): Promise<void>;
  }
}

/** Reads the session cookie on every request of the context it is registered in. */
export default fp(async (app) => {
  const { db } = app.deps;
  app.decorateRequest('user', null);

  app.addHook('onRequest', async (request) => {
    const token = request.cookies[SESSION_COOKIE];
    if (token) request.user = (await findSession(db, token)) ?? null;
  });

  /** A new token at every sign-in, so a token planted before it (session fixation) is worthless. */
  app.decorateReply('signIn', async function (this: FastifyReply, userId: string) {
    if (this.request.user) await deleteSession(db, this.request.user.sessionId);
    const { token, expiresAt } = await createSession(db, userId);
    this.setCookie(SESSION_COOKIE, token, { ...cookieOptions(this.request), expires: expiresAt });
  });

  app.decorateReply('signOut', async function (this: FastifyReply) {
    if (this.request.user) await deleteSession(db, this.request.user.sessionId);
    this.clearCookie(SESSION_COOKIE, cookieOptions(this.request));
  });
});

/** Secure when the request came over https (directly or through a proxy: the app trusts X-Forwarded-Proto). */
export function cookieOptions(request: FastifyRequest) {
  return { path: '/dashboard', httpOnly: true, sameSite: 'lax' as const, secure: request.protocol === 'https' };
}

/** The onRequest hook of the pages only a signed-in user sees: anyone else is sent to sign in. */
export async function requireUser(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (!request.user) return reply.redirect('/dashboard/login', 303);
}

/** The signed-in user; the routes that call it run behind the sign-in check. */
export function signedInUser(request: FastifyRequest): SessionUser {
  if (!request.user) throw new Error('a signed-in route ran without a user');
  return request.user;
}

/** The signed-in user's account. */
export function accountId(request: FastifyRequest): string {
  return signedInUser(request).accountId;
}
