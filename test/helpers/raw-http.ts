import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A keep-alive connection that writes exactly the bytes it is given and reads responses framed
 * by Content-Length: for requests no well-behaved HTTP client would send.
 */
export class RawConnection {
  readonly socket: Socket;
  #received = Buffer.alloc(0);
  #closed = false;
  #wake: (() => void) | undefined;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#received = Buffer.concat([this.#received, chunk]);
      this.#wake?.();
    });
    socket.on('close', () => {
      this.#closed = true;
      this.#wake?.();
    });
    socket.on('error', () => {});
  }

  static async open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawConnection(socket);
  }

  /** Writes, unless the server has already closed the connection (a refusal may come first). */
  write(bytes: Buffer | string): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(bytes);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The next response, or an error after `timeoutMs` (a hang) or when the server closed without one. */
  async response(timeoutMs = 5000): Promise<RawResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = this.#takeResponse();
      if (parsed) return parsed;
      if (this.#closed) throw new Error('the server closed the connection without a complete response');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no response within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }

  #takeResponse(): RawResponse | undefined {
    const headerEnd = this.#received.indexOf('\r\n\r\n');
    if (headerEnd < 0) return undefined;
    const [statusLine, ...lines] = this.#received.subarray(0, headerEnd).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    const bodyEnd = headerEnd + 4 + length;
    if (this.#received.length < bodyEnd) return undefined;
    const body = this.#received.subarray(headerEnd + 4, bodyEnd).toString('utf8');
    this.#received = this.#received.subarray(bodyEnd);
    return { status: Number(statusLine.split(' ')[1]), headers, body };
  }
}

/** One request's head, with Content-Length unless `headers` says otherwise. */
export function requestHead(method: string, path: string, headers: Record<string, string | undefined>): string {
  const lines = Object.entries(headers)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .map(([name, value]) => `${name}: ${value}`);
  return [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...lines, '', ''].join('\r\n');
}

export interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  body: Buffer | string;
}

export const BOUNDARY = '----meterlens-test-boundary';

/** A multipart/form-data body made by hand, closed by the final boundary unless `close` is false. */
export function multipartBody(parts: Part[], options: { boundary?: string; close?: boolean } = {}): Buffer {
  const boundary = options.boundary ?? BOUNDARY;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename}"`}`;
    const type = part.contentType ? `\r\nContent-Type: ${part.contentType}` : '';
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}${type}\r\n\r\n`));
    chunks.push(Buffer.from(part.body));
    chunks.push(Buffer.from('\r\n'));
  }
  if (options.close ?? true) chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}
