import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { PgBoss } from 'pg-boss';
import type { Config } from './config.ts';
import type { Db } from './db/database.ts';
import type { ReaderChain } from './pipeline/read.ts';
import errorEnvelope from './plugins/app/error-envelope.ts';
import gracefulClose from './plugins/app/graceful-close.ts';
import metrics from './plugins/app/metrics.ts';
import multipart from './plugins/external/multipart.ts';
import meterReadingRoutes from './routes/api/meter-reading.ts';
import dashboardRoutes from './routes/dashboard/index.ts';
import healthRoutes from './routes/health.ts';

export interface AppDeps {
  config: Config;
  db: Db;
  boss: PgBoss;
  readers: ReaderChain;
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppDeps;
  }
}

export async function buildApp(deps: AppDeps, options: { logger?: boolean } = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger === false ? false : { level: deps.config.logLevel },
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    trustProxy: (_address: string, hop: number) => hop < deps.config.trustProxyHops,
  });
  app.decorate('deps', deps);
  await app.register(errorEnvelope);
  await app.register(gracefulClose);
  await app.register(metrics, { db: deps.db, token: deps.config.metricsToken });
  await app.register(multipart);
  await app.register(healthRoutes);
  await app.register(meterReadingRoutes, { prefix: '/api' });
  await app.register(dashboardRoutes, { prefix: '/dashboard' });
  app.get('/', (_request, reply) => reply.redirect('/dashboard', 303));
  return app;
}

/** What a worker-only process listens on for Prometheus: /metrics and nothing else. */
export async function buildMetricsServer(deps: Pick<AppDeps, 'config' | 'db'>): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, trustProxy: (_address: string, hop: number) => hop < deps.config.trustProxyHops });
  await app.register(errorEnvelope);
  await app.register(metrics, { db: deps.db, token: deps.config.metricsToken });
  return app;
}
