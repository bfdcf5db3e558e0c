import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import t from 'tap';
import { renderMeterPhoto } from './fakes/meter-photo.ts';
import { startFakeOpenAI } from './fakes/openai-server.ts';
import { embeddedServeEnv } from './helpers/serve.ts';

const root = path.join(import.meta.dirname, '..');

/** `command` started in the checkout with `env`, and what it has printed so far. */
function start(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

/** Whether the service at `url` answers /readyz before `child` exits or 30 s pass. */
async function ready(url: string, child: ChildProcess): Promise<boolean> {
  for (let i = 0; i < 300 && child.exitCode === null; i++) {
    const response = await fetch(`${url}/readyz`).catch(() => undefined);
    if (response?.status === 200) return true;
    await sleep(100);
  }
  return false;
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

/**
 * `npm start` as a user runs it: no DATABASE_URL, so an embedded PostgreSQL under DATA_DIR.
 */
t.test('the all-in-one service on its embedded database', async (t) => {
  const model = await startFakeOpenAI({ delayMs: 1500 });
  const { dataDir, env, port } = await embeddedServeEnv(model.url);
  const url = `http://127.0.0.1:${port}`;
  const postmasterPid = path.join(dataDir, 'postgres', 'postmaster.pid');
  const started: ChildProcess[] = [];
  t.teardown(async () => {
    for (const child of started) child.kill('SIGKILL');
    await model.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const serve = () => {
    const service = start(process.execPath, [path.join(root, 'src', 'cli.ts'), 'serve'], env);
    started.push(service.child);
    return service;
  };

  const first = serve();
  t.ok(await ready(url, first.child), 'first start: ready');
  t.match(first.output(), /initialising PostgreSQL/);
  t.match(first.output(), /listening on http:\/\/localhost:\d+/, 'prints its URL');

  first.child.kill('SIGKILL');
  await exited(first.child);
  t.ok(existsSync(postmasterPid), 'SIGKILL leaves the postmaster running');

  const second = serve();
  t.ok(await ready(url, second.child), 'started again after SIGKILL');
  t.match(second.output(), /reusing PostgreSQL already running/);

  const cli = async (...args: string[]) =>
    JSON.parse(
      (
        await promisify(execFile)(process.execPath, [path.join(root, 'bin', 'meterlens.js'), ...args, '--json'], {
          cwd: root,
          env,
        })
      ).stdout,
    );
  const account = await cli('accounts', 'create', '--name', 'Embedded', '--plan', 'starter');
  const { key } = await cli('keys', 'create', '--account', String(account.id), '--project', 'smoke');

  const form = new FormData();
  form.append('image', new Blob([await renderMeterPhoto()]), 'meter.jpg');
  const inFlight = fetch(`${url}/api/meter-reading/sync`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  while (model.requests.length === 0) await sleep(20);
  const exitCode = exited(second.child);
  second.child.kill('SIGTERM');
  await sleep(100);
  second.child.kill('SIGTERM'); // as Ctrl-C under `npm start` arrives twice: the terminal's and the one npm forwards
  const response = await inFlight;
  t.equal(response.status, 200, 'SIGTERM lets the request in flight finish, a signal sent again meanwhile too');
  t.match(await response.json(), { status: 'completed', reading: '02390.276' });
  t.equal(await exitCode, 0, 'then exits cleanly');
  t.match(second.output(), /SIGTERM: already shutting down/);
  t.match(second.output(), /stopped/);
  t.notOk(existsSync(postmasterPid), 'and stops its PostgreSQL');
});

/**
 * A supervisor that signals the process it started, when that is `npm start`: npm forwards the signal to its script,
 * which must be the service itself (`exec`), not a shell that would die and leave the service and its PostgreSQL
 * running.
 */
t.test('`npm start` stops in order when npm is sent SIGTERM', async (t) => {
  const model = await startFakeOpenAI();
  // The default chain's local reader, as a user's `npm start` loads it.
  const { dataDir, env, port } = await embeddedServeEnv(model.url, { READER_CHAIN: 'local,openai' });
  const postmasterPid = path.join(dataDir, 'postgres', 'postmaster.pid');
  const url = `http://127.0.0.1:${port}`;
  const npm = start('npm', ['start', '--silent'], env);
  t.teardown(async () => {
    npm.child.kill('SIGKILL');
    await model.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  t.ok(await ready(url, npm.child), 'npm start: ready');
  t.equal(
    npm.output().match(/weights local-clean-ppocr-v7: learned only from data that allows commercial use/g)?.length,
    1,
    'says once what its weights may be used for',
  );

  const npmExited = exited(npm.child);
  npm.child.kill('SIGTERM');
  await npmExited;
  for (let i = 0; i < 100 && !/stopped/.test(npm.output()); i++) await sleep(100);
  t.match(npm.output(), /SIGTERM: shutting down/, 'the service itself got the signal');
  t.match(npm.output(), /stopped/, 'and stopped in order');
  t.notOk(existsSync(postmasterPid), 'with its PostgreSQL');
  t.equal(await fetch(`${url}/readyz`).catch(() => 'refused'), 'refused', 'nothing listens on its port');
});
