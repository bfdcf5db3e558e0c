import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The environment of `meterlens serve` as a user runs it: no DATABASE_URL, so an embedded
 * PostgreSQL under a fresh DATA_DIR (the caller removes it), on `port` (HTTP) and `port + 1`.
 */
export async function embeddedServeEnv(port: number, modelUrl: string, extra: Record<string, string> = {}) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'meterlens-serve-'));
  await chmod(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user, who must reach its data
  const env = {
    ...process.env,
    DATABASE_URL: '',
    DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(port + 1),
    PORT: String(port),
    LOG_LEVEL: 'warn',
    READER_CHAIN: 'openai',
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: 'sk-test',
    ...extra,
  };
  return { dataDir, env };
}
