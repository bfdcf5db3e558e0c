import type { Config } from '../config.ts';
import { startEmbeddedPostgres } from './embedded.ts';

export interface DatabaseConnection {
  url: string;
  /** Stops the embedded server where this process is responsible for it; a no-op otherwise. */
  stop(): Promise<void>;
  embedded: boolean;
}

/** DATABASE_URL when set; otherwise the embedded PostgreSQL under DATA_DIR. */
export async function connectDatabase(
  config: Config,
  role: 'owner' | 'guest',
  log: (message: string) => void,
): Promise<DatabaseConnection> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => {}, embedded: false };
  const server = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPostgresPort, role, log });
  return { url: server.url, stop: server.stop, embedded: true };
}
