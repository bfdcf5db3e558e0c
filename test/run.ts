/**
 * `npm test`: runs the tap suite against DATABASE_URL, or, when it is unset, against an embedded
 * PostgreSQL started for the run (data under .tap/postgres) and stopped afterwards.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';

const root = path.join(import.meta.dirname, '..');
const bin = path.join(root, 'node_modules', '.bin');
const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}` };

let embedded: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
if (!env.DATABASE_URL) {
  embedded = await startEmbeddedPostgres({
    dataDir: path.join(root, '.tap'),
    port: Number(env.TEST_EMBEDDED_PG_PORT ?? 5489),
    // A guest stops the server only if it started it, so concurrent runs can share one.
    role: 'guest',
    log: (message) => console.log(`# ${message}`),
  });
  env.DATABASE_URL = embedded.url;
  console.log('# tests run against an embedded PostgreSQL');
}

const tap = spawn(path.join(bin, 'tap'), process.argv.slice(2), { stdio: 'inherit', env, cwd: root });
const exitCode = await new Promise<number>((resolve) => tap.on('close', (code) => resolve(code ?? 1)));
await embedded?.stop();
process.exit(exitCode);
