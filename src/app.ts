import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import type { ServiceDeps } from './deps.ts';
import errorEnvelope, {
  clientErrorEnvelope,
  expectationEnvelope,
  frameworkErrorEnvelope,
} from './plugins/app/error-envelope.ts';
import expectContinue from './plugins/app/expect-continue.ts';
import gracefulClose from './plugins/app/graceful-close.ts';
import metrics from './plugins/app/metrics.ts';
import requestDeadline from './plugins/app/request-deadline.ts';
import requestIdHeader, { requestId } from './plugins/app/request-id.ts';
import requireHost from './plugins/app/require-host.ts';
import securityHeaders from './plugins/app/security-headers.ts';
import multipart from './plugins/external/multipart.ts';
import openapi from './plugins/external/openapi.ts';
import meterReadingRoutes from './routes/api/meter-reading.ts';
import meterRoutes from './routes/api/meters.ts';
import submissionRoutes from './routes/api/submissions.ts';
import dashboardRoutes from './routes/dashboard/index.ts';
import healthRoutes from './routes/health.ts';

declare module 'fastify' {
  interface FastifyInstance {
    deps: ServiceDeps;
  }
}

export async function buildApp(deps: ServiceDeps, options: { logger?: boolean } = {}): Promise<FastifyInstance> {
  // Node's own deadline, behind request-deadline's, for a request whose handler never ends.
  const nodeRequestTimeoutMs = (deps.config.requestTimeoutSeconds + 5) * 1000;
  const app = Fastify({
    logger: options.logger === false ? false : { level: deps.config.logLevel },
    genReqId: requestId,
    requestIdHeader: false,
    trustProxy: trustedProxies(deps.config),
    requestTimeout: nodeRequestTimeoutMs,
    http: {
      // Node checks headersTimeout against it as the server is made, before Fastify sets the one above.
      requestTimeout: nodeRequestTimeoutMs,
      // Headers still arriving after REQUEST_TIMEOUT_SECONDS get the 408 of clientErrorEnvelope. Node looks
      // for late ones every connectionsCheckingInterval (30 s by default): every second keeps the bound true.
      headersTimeout: deps.config.requestTimeoutSeconds * 1000,
      connectionsCheckingInterval: 1000,
      // require-host refuses a request without Host in the envelope.
      requireHostHeader: false,
    },
    // graceful-close refuses requests that arrive while closing, in the error envelope.
    return503OnClosing: false,
    clientErrorHandler: clientErrorEnvelope,
    frameworkErrors: frameworkErrorEnvelope,
  });
  app.decorate('deps', deps);
  app.server.maxConnections = deps.config.maxConnections;
  app.server.on('checkExpectation', (_request, response) => expectationEnvelope(app, response));
  app.server.on('drop', () =>
    app.log.warn(`connection closed unanswered: MAX_CONNECTIONS (${deps.config.maxConnections}) are open`),
  );
  // Only JSON is read as a body besides the multipart upload and the dashboard's forms: text/plain is the
  // documented 415.
  app.removeContentTypeParser('text/plain');
  await app.register(requestIdHeader);
  await app.register(securityHeaders);
  await app.register(requireHost);
  await app.register(errorEnvelope);
  await app.register(gracefulClose);
  await app.register(expectContinue);
  await app.register(metrics, { db: deps.db, token: deps.config.metricsToken });
  await app.register(requestDeadline);
  await app.register(multipart);
  await app.register(openapi);
  await app.register(healthRoutes);
  await app.register(meterReadingRoutes, { prefix: '/api' });
  await app.register(meterRoutes, { prefix: '/api' });
  await app.register(submissionRoutes, { prefix: '/api' });
  await app.register(dashboardRoutes, { prefix: '/dashboard' });
  app.get('/', (_request, reply) => reply.redirect('/dashboard', 303));
  return app;
}

/** What a worker-only process listens on for Prometheus: /metrics and nothing else. */
export async function buildMetricsServer(deps: Pick<ServiceDeps, 'config' | 'db'>): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, trustProxy: trustedProxies(deps.config) });
  await app.register(errorEnvelope);
  await app.register(metrics, { db: deps.db, token: deps.config.metricsToken });
  return app;
}

/** Fastify's trustProxy: the proxies TRUST_PROXY names, or none. */
function trustedProxies(config: Config): string[] | false {
  return config.trustProxy.length > 0 ? config.trustProxy : false;
}
