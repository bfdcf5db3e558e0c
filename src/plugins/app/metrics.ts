import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Db } from '../../db/database.ts';
import { DomainError } from '../../errors.ts';
import { httpRequestDuration, METRICS_CONTENT_TYPE, metricsText } from '../../metrics.ts';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/**
 * Times every request by its route pattern (never the raw URL: ids would make a series each)
 * and serves GET /metrics: to `Authorization: Bearer <METRICS_TOKEN>` when a token is set,
 * otherwise to loopback clients that connect directly (see `isDirectLoopback`).
 */
export default fp(async (app: FastifyInstance, options: { db: Db; token: string | undefined }) => {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    httpRequestDuration.observe(
      { method: request.method, route, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  app.get('/metrics', async (request, reply) => {
    authorizeScrape(request, options.token);
    return reply.type(METRICS_CONTENT_TYPE).send(await metricsText(options.db));
  });
});

function authorizeScrape(request: FastifyRequest, token: string | undefined): void {
  if (token === undefined) {
    if (!isDirectLoopback(request)) {
      throw new DomainError(
        'refused',
        'authorization',
        'Metrics are served to loopback clients only, not through a proxy; set METRICS_TOKEN to scrape from elsewhere',
        {
          status: 403,
        },
      );
    }
    return;
  }
  const expected = Buffer.from(`Bearer ${token}`);
  const given = Buffer.from(request.headers.authorization ?? '');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new DomainError('refused', 'authorization', 'Metrics need Authorization: Bearer <METRICS_TOKEN>', {
      status: 401,
      headers: { 'www-authenticate': 'Bearer realm="metrics"' },
    });
  }
}

/**
 * The connection itself comes from loopback, and no proxy forwarded the request. `request.ip` is not
 * used: under TRUST_PROXY it is whatever a trusted (by default any private) address claims in
 * X-Forwarded-For. A proxy on the same host connects from loopback too, so a forwarded request is
 * refused even then: it comes from whoever reached the proxy.
 */
function isDirectLoopback(request: FastifyRequest): boolean {
  const forwarded = request.headers['x-forwarded-for'] !== undefined || request.headers.forwarded !== undefined;
  return !forwarded && LOOPBACK.test(request.socket.remoteAddress ?? '');
}
