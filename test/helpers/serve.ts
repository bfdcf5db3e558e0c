import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from './ports.ts';

/**
 * The environment of `meterlens serve` as a user runs it: no DATABASE_URL, so an embedded
 * PostgreSQL under a fresh DATA_DIR (the caller removes it), HTTP and PostgreSQL on free ports.
 */
export async function embeddedServeEnv(modelUrl: string, extra: Record<string, string> = {}) {
  const port = await freePort();
  const dataDir = await mkdtemp(path.join(tmpdir(), 'meterlens-serve-'));
  await chmod(dataDir, 0o755); // as root, PostgreSQL runs as the postgres user, who must reach its data
  const env = {
    ...process.env,
    DATABASE_URL: '',
    DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(await freePort()),
    PORT: String(port),
    LOG_LEVEL: 'warn',
    READER_CHAIN: 'openai',
    OPENAI_BASE_URL: modelUrl,
    OPENAI_API_KEY: 'sk-test',
    ...extra,
  };
  return { dataDir, env, port };
}
