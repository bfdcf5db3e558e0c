import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** What every answer carries, whoever gives it: browsers do not guess its type, caches do not keep it. */
export const ANSWER_HEADERS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' } as const;

/**
 * A year, the lifetime browsers' preload lists ask for. Without includeSubDomains: other hosts of
 * the operator's domain are not ours to move to https.
 */
const STRICT_TRANSPORT_SECURITY = 'max-age=31536000';

/**
 * ANSWER_HEADERS, except a Cache-Control the route chose (the dashboard's photos and assets), and
 * HSTS on an answer to a request that came over https, directly or through a trusted proxy's
 * X-Forwarded-Proto: over plain http a browser ignores it, and only the site itself may set it.
 */
export function secureAnswer(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-content-type-options', ANSWER_HEADERS['x-content-type-options']);
  if (!reply.hasHeader('cache-control')) reply.header('cache-control', ANSWER_HEADERS['cache-control']);
  if (request.protocol === 'https') reply.header('strict-transport-security', STRICT_TRANSPORT_SECURITY);
}

/** Every answer of the app, the API's and the dashboard's, errors included. */
export default fp(async (app) => {
  app.addHook('onSend', async (request, reply) => secureAnswer(request, reply));
});

/** Pages load only this site's stylesheet and script, cannot be framed, and post only here. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self'",
  "style-src 'self'",
  "script-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** The dashboard's pages, besides what every answer carries. */
export const pageSecurityHeaders = fp(async (app) => {
  app.addHook('onSend', async (_request, reply) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    reply.header('x-frame-options', 'DENY');
    reply.header('referrer-policy', 'same-origin');
  });
});
