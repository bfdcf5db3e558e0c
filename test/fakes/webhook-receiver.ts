import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
  /** The status it was answered with, once the answer has been sent. */
  answeredStatus?: number;
}

export type Answer = (response: ServerResponse) => void;

/** An answer with this status and headers; an Answer that never ends leaves the sender waiting. */
export const status =
  (code: number, headers: Record<string, string> = {}): Answer =>
  (response) =>
    response.writeHead(code, headers).end();

/**
 * A client's webhook endpoint on 127.0.0.1: records every request and answers `defaultStatus`
 * (204), unless `answer(path, …)` scripted the next answers for that path.
 */
export async function startWebhookReceiver(defaultStatus = 204) {
  const received: ReceivedWebhook[] = [];
  const scripted = new Map<string, Answer[]>();
  const waiters: Array<() => void> = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const webhook: ReceivedWebhook = {
        path,
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      received.push(webhook);
      response.once('finish', () => (webhook.answeredStatus = response.statusCode));
      (scripted.get(path)?.shift() ?? status(defaultStatus))(response);
      for (const wake of waiters.splice(0)) wake();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    /** The next requests to `path` get these answers, in order. */
    answer(path: string, ...answers: Answer[]): void {
      scripted.set(path, answers);
    },
    requestsTo(path: string): ReceivedWebhook[] {
      return received.filter((request) => request.path === path);
    },
    /** Resolves once `count` webhooks have arrived. */
    async waitFor(count: number): Promise<ReceivedWebhook[]> {
      while (received.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
      return received;
    },
    async close(): Promise<void> {
      server.closeAllConnections();
      server.close();
    },
  };
}
