/**
 * Loopback HTTP server shared by the fake model APIs: records requests, applies the behaviour
 * (delay, failures, answer) and leaves the wire format to the API it fakes.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MeterAnswer } from '../../src/readers/hosted.ts';

export interface FakeBehaviour {
  /** What the model answers: a JSON answer, or raw text (for unparseable answers). */
  answer?: MeterAnswer | string;
  delayMs?: number;
  /** HTTP status of failed requests, e.g. 500, 429 or 529. Without failTimes every request fails. */
  status?: number;
  /** Fail only the first N requests (counted from start or setBehaviour) with `status`, then answer. */
  failTimes?: number;
  /**
   * `retry-after-ms` sent with failures. Both SDKs obey it, so the default of 1 ms keeps tests of
   * retries fast instead of waiting out the SDKs' 0.5 s+ backoff.
   */
  retryAfterMs?: number;
  /** Model name the server reports; default the one requested (OpenAI reports dated snapshots). */
  reportedModel?: string;
}

export interface RecordedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  /** The JSON body the client sent (the raw text if it was not JSON). */
  body: any;
}

export interface FakeServer {
  /** The baseURL to give the SDK. */
  url: string;
  requests: RecordedRequest[];
  setBehaviour(behaviour: FakeBehaviour): void;
  close(): Promise<void>;
}

export const DEFAULT_ANSWER: MeterAnswer = { reading: '02390.276', confidence: 97, unobstructed: true };

/** The wire format of one API. */
export interface FakeApi {
  /** Path the SDK appends to the server's origin, e.g. `/v1` for OpenAI's baseURL. */
  basePath: string;
  /** Path of the one endpoint served, e.g. `/v1/messages`. */
  endpoint: string;
  answer(request: RecordedRequest, answer: MeterAnswer | string, model: string, sequence: number): unknown;
  error(status: number, message: string): unknown;
}

export async function startFakeApi(api: FakeApi, initialBehaviour: FakeBehaviour = {}): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  let behaviour = initialBehaviour;
  let failuresLeft = failuresFor(behaviour);

  function reply(
    request: RecordedRequest,
    method: string | undefined,
  ): { status: number; headers: Record<string, string>; body: unknown } {
    if (method !== 'POST' || request.path !== api.endpoint) {
      return { status: 404, headers: {}, body: api.error(404, `no route for ${method} ${request.path}`) };
    }
    if (behaviour.status !== undefined && failuresLeft > 0) {
      failuresLeft--;
      return {
        status: behaviour.status,
        headers: { 'retry-after-ms': String(behaviour.retryAfterMs ?? 1) },
        body: api.error(behaviour.status, `fake failure with status ${behaviour.status}`),
      };
    }
    const model = behaviour.reportedModel ?? String(request.body?.model ?? 'unknown');
    return {
      status: 200,
      headers: {},
      body: api.answer(request, behaviour.answer ?? DEFAULT_ANSWER, model, requests.length),
    };
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    // A client that gives up mid-upload makes the request emit 'error'; that is not the fake's failure.
    req.on('error', () => {});
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: RecordedRequest = {
        path: req.url ?? '',
        headers: req.headers,
        body: parseBody(Buffer.concat(chunks)),
      };
      requests.push(request);
      const { status, headers, body } = reply(request, req.method);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (!behaviour.delayMs) return send();
      const timer = setTimeout(send, behaviour.delayMs);
      res.on('close', () => clearTimeout(timer));
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}${api.basePath}`,
    requests,
    setBehaviour(next) {
      behaviour = next;
      failuresLeft = failuresFor(next);
    },
    async close() {
      if (!server.listening) return;
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}

function failuresFor(behaviour: FakeBehaviour): number {
  return behaviour.status === undefined ? 0 : (behaviour.failTimes ?? Infinity);
}

function parseBody(raw: Buffer): unknown {
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** What the model "writes" when it answers in text. */
export function answerText(answer: MeterAnswer | string): string {
  return typeof answer === 'string' ? answer : JSON.stringify(answer);
}
