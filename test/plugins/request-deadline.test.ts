import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { createCustomer, startTestService, submitPhoto } from '../helpers/service.ts';

/**
 * Sends the headers of a 10 kB multipart upload, then one byte every `everyMs`, and collects what the
 * server answers until it closes the connection (or `giveUpMs` passes).
 */
async function trickleUpload(url: string, key: string, everyMs: number, giveUpMs: number) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  const closed = new Promise<boolean>((resolve) => {
    socket.once('close', () => resolve(true));
    setTimeout(() => resolve(false), giveUpMs);
  });
  socket.write(
    'POST /api/meter-reading HTTP/1.1\r\n' +
      `Host: ${hostname}\r\nAuthorization: Bearer ${key}\r\n` +
      'Content-Type: multipart/form-data; boundary=trickle\r\nContent-Length: 10000\r\n\r\n' +
      '--trickle\r\nContent-Disposition: form-data; name="image"; filename="meter.jpg"\r\n\r\n',
  );
  const trickle = setInterval(() => socket.writable && socket.write('x'), everyMs);
  const wasClosed = await closed;
  clearInterval(trickle);
  socket.destroy();
  return { answer, wasClosed };
}

t.test(
  'an upload trickling in slower than REQUEST_TIMEOUT_SECONDS gets 408 and its connection is closed',
  async (t) => {
    const service = await startTestService(t, { worker: false, env: { REQUEST_TIMEOUT_SECONDS: '1' } });
    const { key } = await createCustomer(service.db);

    const { answer, wasClosed } = await trickleUpload(service.url, key, 300, 10_000);

    t.match(answer, /^HTTP\/1\.1 408 /, 'answered 408');
    t.match(answer, /connection: close/i);
    t.same(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), {
      errors: { request: ['The request was not received within 1 seconds'] },
    });
    t.ok(wasClosed, 'and the server closed the connection');
    const meters = await service.db.selectFrom('submissions').select('id').execute();
    t.equal(meters.length, 0, 'nothing was accepted');
  },
);

t.test('the deadline is on receiving the request: a sync reading may take longer once the upload is in', async (t) => {
  const service = await startTestService(t, { env: { REQUEST_TIMEOUT_SECONDS: '1' }, model: { delayMs: 1500 } });
  const { key } = await createCustomer(service.db);

  const response = await submitPhoto(service, { key, image: await renderMeterPhoto(), sync: true });

  t.equal(response.status, 200);
  t.match(response.body, { status: 'completed' });
  await sleep(10);
});
