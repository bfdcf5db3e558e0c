import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
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

/** What pg.Pool, pg.Client and pg-boss are given for a database URL. */
export interface PgConnectionOptions {
  connectionString: string;
  ssl: false | ConnectionOptions;
}

const TLS_URL_PARAMETERS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'uselibpqcompat'];

/**
 * TLS as libpq's sslmode means it, from the URL's `sslmode` or else PGSSLMODE: `require` (what
 * Heroku Postgres needs; its certificates are not signed by a public CA) and `no-verify` encrypt
 * without checking the certificate, `verify-ca`/`verify-full` check it (against `sslrootcert`
 * when given), anything else connects in clear. The TLS parameters are taken out of the URL:
 * pg would otherwise let them override the options given here.
 */
export function pgConnectionOptions(
  url: string,
  env: Record<string, string | undefined> = process.env,
): PgConnectionOptions {
  const parsed = new URL(url);
  const mode = parsed.searchParams.get('sslmode') ?? env.PGSSLMODE;
  const rootCertificate = parsed.searchParams.get('sslrootcert');
  for (const name of TLS_URL_PARAMETERS) parsed.searchParams.delete(name);
  const connectionString = parsed.toString();
  switch (mode) {
    case 'require':
    case 'no-verify':
      return { connectionString, ssl: { rejectUnauthorized: false } };
    case 'verify-ca':
    case 'verify-full':
      return {
        connectionString,
        ssl: {
          rejectUnauthorized: true,
          ...(rootCertificate && { ca: readFileSync(rootCertificate, 'utf8') }),
          // verify-ca checks the chain only, not that the certificate names this host.
          ...(mode === 'verify-ca' && { checkServerIdentity: () => undefined }),
        },
      };
    default:
      return { connectionString, ssl: false };
  }
}
