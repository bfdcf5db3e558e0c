import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { RawConnection, type RawResponse } from './helpers/raw-http.ts';
import { createCustomer, startTestService } from './helpers/service.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** One request's bytes on a fresh connection, and what came back (or why nothing did). */
async function exchange(url: string, bytes: string | Buffer, timeoutMs = 3000): Promise<RawResponse> {
  const connection = await RawConnection.open(url);
  try {
    connection.write(bytes);
    return await connection.response(timeoutMs);
  } finally {
    connection.close();
  }
}

t.test('malformed requests: every answer is a 4xx in the envelope with X-Request-Id, and none hangs', async (t) => {
  const service = await startTestService(t, { worker: false });
  const { key } = await createCustomer(service.db);
  const auth = `Authorization: Bearer ${key}\r\n`;
  const head = (method: string, path: string, headers = '') =>
    `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}`;
  const withBody = (method: string, path: string, type: string, body: string | Buffer, headers = '') =>
    Buffer.concat([
      Buffer.from(
        `${head(method, path, `${auth}Content-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}`)}\r\n`,
      ),
      Buffer.from(body),
    ]);
  const patch = (type: string, body: string | Buffer, headers = '') =>
    withBody('PATCH', '/api/meters/SN-1', type, body, headers);

  const corpus: Array<[name: string, bytes: string | Buffer, status: number]> = [
    // bodies
    ['JSON cut off', patch('application/json', '{"max_flow'), 400],
    ['JSON of the wrong shape', patch('application/json', '[1,2]'), 422],
    ['JSON with __proto__', patch('application/json', '{"__proto__":{"x":1}}'), 400],
    [
      'JSON over 1 MiB',
      patch('application/json', JSON.stringify({ max_flow_m3_per_hour: 1, pad: 'x'.repeat(1_100_000) })),
      413,
    ],
    ['text/plain where JSON is required', patch('text/plain', '{"max_flow_m3_per_hour":6}'), 415],
    ['no Content-Type', `${head('PATCH', '/api/meters/SN-1', `${auth}Content-Length: 2\r\n`)}\r\n{}`, 415],
    ['a Content-Type that is no media type', patch(';;;', '{}'), 415],
    [
      'gzip-encoded JSON, refused from its headers',
      patch('application/json', Buffer.from([0x1f, 0x8b, 8, 0, 0, 0]), 'Content-Encoding: gzip\r\n'),
      415,
    ],
    ['multipart without a boundary', withBody('POST', '/api/meter-reading', 'multipart/form-data', 'x'), 422],
    [
      'multipart that never closes',
      withBody(
        'POST',
        '/api/meter-reading',
        'multipart/form-data; boundary=b',
        '--b\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\n\r\nxx',
      ),
      422,
    ],
    [
      'a form where a photo is expected',
      withBody('POST', '/api/meter-reading', 'application/x-www-form-urlencoded', 'image=1'),
      422,
    ],
    // framing and headers
    [
      'a bad chunk size',
      `${head('PATCH', '/api/meters/SN-1', `${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n`)}\r\nzz\r\n{}\r\n0\r\n\r\n`,
      400,
    ],
    [
      'Content-Length and Transfer-Encoding both',
      `${head('PATCH', '/api/meters/SN-1', `${auth}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n`)}\r\n0\r\n\r\n`,
      400,
    ],
    [
      'two Content-Lengths that differ',
      `${head('PATCH', '/api/meters/SN-1', `${auth}Content-Length: 2\r\nContent-Length: 3\r\n`)}\r\n{}`,
      400,
    ],
    [
      'an expectation other than 100-continue',
      `${head('GET', '/api/meter-readings', `${auth}Expect: the-unexpected\r\n`)}\r\n`,
      417,
    ],
    [
      'a transfer coding other than chunked last',
      `${head('PATCH', '/api/meters/SN-1', `${auth}Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n`)}\r\n{}`,
      400,
    ],
    ['no Host', `GET /api/meter-readings HTTP/1.1\r\n${auth}\r\n`, 400],
    ['headers over 16 KB', `${head('GET', '/api/meter-readings', `X-Pad: ${'a'.repeat(20_000)}\r\n`)}\r\n`, 431],
    ['a header name with a space', `${head('GET', '/healthz', 'Bad Header: x\r\n')}\r\n`, 400],
    ['a NUL in a header value', `${head('GET', '/healthz', 'X-Thing: a\0b\r\n')}\r\n`, 400],
    [
      'a key of 10 000 characters',
      `${head('GET', '/api/meter-readings', `Authorization: Bearer ${'k'.repeat(10_000)}\r\n`)}\r\n`,
      422,
    ],
    // paths
    ['broken percent-encoding', `${head('GET', '/api/meter-reading/%E0%A4%A', auth)}\r\n`, 400],
    ['a path part over 100 characters', `${head('GET', `/api/meter-reading/${'a'.repeat(200)}`, auth)}\r\n`, 414],
    ['a URL over 16 KB', `${head('GET', `/api/meter-readings?x=${'a'.repeat(20_000)}`, auth)}\r\n`, 431],
    ['a NUL in the path', `${head('GET', '/api/meter\0readings', auth)}\r\n`, 400],
    ['dot segments', `${head('GET', '/api/../api/meter-readings', auth)}\r\n`, 404],
    ['an unknown route', `${head('GET', '/api/nothing-here', auth)}\r\n`, 404],
    // query
    ['a limit that is no number', `${head('GET', '/api/meter-readings?limit=ten', auth)}\r\n`, 422],
    ['a parameter twice', `${head('GET', '/api/meter-readings?limit=1&limit=2', auth)}\r\n`, 422],
    ['a value with broken percent-encoding', `${head('GET', '/api/meter-readings?status=%zz', auth)}\r\n`, 422],
    ['a leap second', `${head('GET', '/api/meter-readings?created_after=2016-12-31T23:59:60Z', auth)}\r\n`, 422],
    ['February 30th', `${head('GET', '/api/meter-readings?created_after=2026-02-30T00:00:00Z', auth)}\r\n`, 422],
    // methods and versions
    ['a method HTTP does not have', `${head('BREW', '/healthz')}\r\n`, 400],
    ['a method in lower case', `${head('get', '/healthz')}\r\n`, 400],
    ['a method the route does not take', `${head('DELETE', '/api/meter-readings', auth)}\r\n`, 404],
    ['a version that is no number', 'GET /healthz HTTP/1.x\r\nHost: 127.0.0.1\r\n\r\n', 400],
    ['not HTTP at all', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n', 400],
  ];
  const started = Date.now();
  for (const [name, bytes, status] of corpus) {
    let response: RawResponse;
    try {
      response = await exchange(service.url, bytes);
    } catch (error) {
      t.fail(`${name}: ${(error as Error).message}`);
      continue;
    }
    t.equal(response.status, status, `${name}: ${status}`);
    t.match(response.headers['content-type'], /^application\/json/, `${name}: JSON`);
    t.match(JSON.parse(response.body), { errors: Object }, `${name}: in the envelope`);
    t.ok(
      Object.values(JSON.parse(response.body).errors).every(
        (messages) => Array.isArray(messages) && messages.length > 0,
      ),
      `${name}: messages`,
    );
    t.match(response.headers['x-request-id'], UUID, `${name}: X-Request-Id`);
    t.equal(response.headers['x-content-type-options'], 'nosniff', `${name}: nosniff`);
  }
  t.ok(Date.now() - started < 10_000, 'the corpus is answered in seconds');
  t.equal((await fetch(`${service.url}/healthz`)).status, 200, 'and the process still serves');
});

t.test('the dashboard refuses a form over 64 KB with its 413 page', async (t) => {
  const service = await startTestService(t, { worker: false });
  const response = await fetch(`${service.url}/dashboard/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `email=a%40b.c&password=${'x'.repeat(70 * 1024)}`,
  });
  t.equal(response.status, 413);
  t.match(response.headers.get('content-type'), /^text\/html/);
  t.match(response.headers.get('x-request-id'), UUID);
  t.match(await response.text(), /too large/);
});

t.test('headers dribbled in get their 408 within about a second of REQUEST_TIMEOUT_SECONDS', async (t) => {
  const service = await startTestService(t, { worker: false, env: { REQUEST_TIMEOUT_SECONDS: '2' } });
  const connection = await RawConnection.open(service.url);
  t.teardown(() => connection.close());
  const started = Date.now();
  connection.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  const dribble = setInterval(() => connection.write('X-Slow: a\r\n'), 200);
  t.teardown(() => clearInterval(dribble));

  const response = await connection.response(6000);
  const seconds = (Date.now() - started) / 1000;

  t.equal(response.status, 408);
  t.same(JSON.parse(response.body), { errors: { request: ['The request was not received in time'] } });
  t.match(response.headers['x-request-id'], UUID);
  t.ok(seconds >= 1.9 && seconds <= 3.5, `answered after ${seconds.toFixed(1)} s`);
  await sleep(100);
  t.ok(connection.closed, 'and the connection is closed');
});

t.test('MAX_CONNECTIONS: a connection over the cap is closed unanswered; one freed lets the next in', async (t) => {
  const service = await startTestService(t, { worker: false, env: { MAX_CONNECTIONS: '2' } });
  const healthz = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
  const open = await Promise.all([RawConnection.open(service.url), RawConnection.open(service.url)]);
  t.teardown(() => open.forEach((connection) => connection.close()));
  for (const connection of open) {
    connection.write(healthz);
    t.equal((await connection.response()).status, 200, 'under the cap: served, and kept alive');
  }

  const over = await RawConnection.open(service.url);
  over.write(healthz);
  await t.rejects(
    over.response(2000),
    /closed the connection without a complete response/,
    'over the cap: closed at once',
  );

  open[0].close();
  await sleep(200);
  t.equal((await exchange(service.url, healthz)).status, 200, 'a freed place is taken again');
});
