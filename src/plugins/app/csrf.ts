import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { DomainError } from '../../errors.ts';
import { cookieOptions } from './session.ts';

const ANONYMOUS_CSRF_COOKIE = 'meterlens_csrf';
export const CSRF_FIELD = '_csrf';

declare module 'fastify' {
  interface FastifyRequest {
    /** The token every form on the page must send back in `_csrf`. */
    csrfToken(reply: FastifyReply): string;
  }
}

/** Raised for a state-changing request without the right token; shown as 403. */
function csrfRefused(): DomainError {
  return new DomainError(
    'refused',
    CSRF_FIELD,
    'The form has expired or did not come from this site. Go back, reload the page and try again.',
  );
}

/**
 * Synchroniser tokens: a signed-in user's forms carry the session's token; the sign-in and
 * sign-up forms carry a random token that is also set as an HttpOnly cookie (double submit).
 * Every POST must send the matching token, compared in constant time.
 */
export default fp(async (app) => {
  app.decorateRequest('csrfToken', function (this: FastifyRequest, reply: FastifyReply) {
    if (this.user) return this.user.csrfToken;
    let token = this.cookies[ANONYMOUS_CSRF_COOKIE];
    if (!token) {
      token = randomBytes(32).toString('base64url');
      this.cookies[ANONYMOUS_CSRF_COOKIE] = token;
      reply.setCookie(ANONYMOUS_CSRF_COOKIE, token, cookieOptions(this));
    }
    return token;
  });

  // Before the form is validated: a forged form is refused as forged, whatever its fields.
  app.addHook('preValidation', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    const expected = request.user ? request.user.csrfToken : request.cookies[ANONYMOUS_CSRF_COOKIE];
    const sent = (request.body as Record<string, unknown> | undefined)?.[CSRF_FIELD];
    if (!expected || typeof sent !== 'string' || !sameToken(sent, expected)) throw csrfRefused();
  });
});

function sameToken(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
