import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import t from 'tap';
import { embeddedServeEnv } from './helpers/serve.ts';

const root = path.join(import.meta.dirname, '..');

/**
 * The red-team's hung upload: `serve` given SIGTERM while a client sends an upload that never
 * finishes must still cut it after SHUTDOWN_GRACE_SECONDS, stop its embedded PostgreSQL and exit.
 */
t.test('SIGTERM with a hung upload open: serve exits within the grace period and stops its PostgreSQL', async (t) => {
  const graceSeconds = 2;
  const { dataDir, env, port } = await embeddedServeEnv('http://127.0.0.1:9/v1', {
    SHUTDOWN_GRACE_SECONDS: String(graceSeconds),
    // Longer than the test: the grace period, not the request deadline, must end the upload.
    REQUEST_TIMEOUT_SECONDS: '600',
  });
  const serve = spawn(process.execPath, [path.join(root, 'src', 'cli.ts'), 'serve'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  serve.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => serve.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    serve.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });
  for (let i = 0; i < 300 && serve.exitCode === null; i++) {
    if ((await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200) break;
    await sleep(100);
  }

  const cli = async (...args: string[]) =>
    JSON.parse(
      (
        await promisify(execFile)(process.execPath, [path.join(root, 'bin', 'meterlens.js'), ...args, '--json'], {
          cwd: root,
          env,
        })
      ).stdout,
    );
  const account = await cli('accounts', 'create', '--name', 'Hung upload', '--plan', 'starter');
  const { key } = await cli('keys', 'create', '--account', String(account.id), '--project', 'shutdown');

  const upload = connect(port, '127.0.0.1');
  upload.on('error', () => {});
  const uploadClosed = new Promise<void>((resolve) => upload.once('close', () => resolve()));
  upload.write(
    `POST /api/meter-reading HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
      'Content-Type: multipart/form-data; boundary=hung\r\nContent-Length: 100000\r\n\r\n' +
      '--hung\r\nContent-Disposition: form-data; name="image"; filename="meter.jpg"\r\n\r\nxx',
  );
  await sleep(500); // the server is now reading the upload, which never ends

  const signalledAt = Date.now();
  serve.kill('SIGTERM');
  const exitCode = await Promise.race([exited, sleep((graceSeconds + 20) * 1000, 'still running')]);
  const seconds = (Date.now() - signalledAt) / 1000;

  t.equal(exitCode, 0, 'exits cleanly');
  t.ok(seconds < graceSeconds + 5, `within the grace period plus a few seconds (${seconds.toFixed(1)} s)`);
  await uploadClosed;
  t.pass('the hung upload was cut');
  t.match(output, /grace period over/);
  t.match(output, /stopped/);
  t.notOk(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'its PostgreSQL is stopped');
});
