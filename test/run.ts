/**
 * `npm test`: runs the tap suite against DATABASE_URL, or, when it is unset, against an embedded
 * PostgreSQL of this run's own (data under .tap/run-<pid>, on a free port unless
 * TEST_EMBEDDED_PG_PORT says which), removed afterwards. Runs never share a server, so one run
 * finishing never stops the server under another, from this checkout or another.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { removeEmbeddedPostgres, startEmbeddedPostgres } from '../src/db/embedded.ts';
import { freePort } from './helpers/ports.ts';

const root = path.join(import.meta.dirname, '..');
const bin = path.join(root, 'node_modules', '.bin');
const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}` };
const runsDir = path.join(root, '.tap');
const runDir = path.join(runsDir, `run-${process.pid}`);

let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
if (!env.DATABASE_URL) {
  try {
    await removeAbandonedRuns();
    embedded = await startEmbeddedPostgres({
      dataDir: runDir,
      port: env.TEST_EMBEDDED_PG_PORT ? Number(env.TEST_EMBEDDED_PG_PORT) : await freePort(),
      role: 'owner',
      log: (message) => console.log(`# ${message}`),
    });
  } catch (error) {
    await removeEmbeddedPostgres(runDir).catch(() => {});
    console.error(`npm test: ${(error as Error).message}`);
    process.exit(1);
  }
  env.DATABASE_URL = embedded.url;
  console.log('# tests run against an embedded PostgreSQL');
}

const tap = spawn(path.join(bin, 'tap'), process.argv.slice(2), { stdio: 'inherit', env, cwd: root });
const exitCode = await new Promise<number>((resolve) => tap.on('close', (code) => resolve(code ?? 1)));
if (embedded) await removeEmbeddedPostgres(runDir);
process.exit(exitCode);

/** The servers and data of runs that were killed before they could remove them. */
async function removeAbandonedRuns(): Promise<void> {
  const entries = await readdir(runsDir).catch(() => []);
  for (const entry of entries) {
    const pid = /^run-(\d+)$/.exec(entry)?.[1];
    if (pid && !existsSync(`/proc/${pid}`)) await removeEmbeddedPostgres(path.join(runsDir, entry));
  }
}
