import { randomUUID } from 'node:crypto';
import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isDatabaseUnavailable } from '../../db/database.ts';
import { DomainError, errorBody, type ErrorKind } from '../../errors.ts';
import { REQUEST_ID_HEADER } from './request-id.ts';
import { ANSWER_HEADERS, secureAnswer } from './security-headers.ts';

/** The API's status of each kind of error; it refuses a key, a subscription or the usage with 422, as documented. */
export const API_STATUS: Record<ErrorKind, number> = {
  invalid: 422,
  not_found: 404,
  conflict: 409,
  refused: 422,
  unavailable: 503,
};

export function httpStatus(error: DomainError, statuses: Record<ErrorKind, number> = API_STATUS): number {
  return error.status ?? statuses[error.kind];
}

/** Seconds a client should wait before retrying during a database outage. */
const DATABASE_RETRY_AFTER_SECONDS = 10;

/** Node's refusals of requests it could not parse, before Fastify sees them. */
const CLIENT_ERRORS: Record<string, [status: number, message: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'The request headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request was not received in time'],
};

/**
 * Fastify's `clientErrorHandler`: Node's http server answers a request it cannot parse (headers
 * too large or too late, a malformed request line) itself; this gives that answer the same
 * envelope and headers as any other, then closes the connection, as Node does.
 */
export function clientErrorEnvelope(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'The request is not valid HTTP'];
  const { headers, body } = refusalBeforeFastify(this, status, message, error.code);
  if (socket.writable) {
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}\r\n${body}`);
  }
  socket.destroySoon();
}

/**
 * The http server's `checkExpectation`: an `Expect` other than `100-continue` is refused with 417
 * (RFC 9110, 10.1.1) in the envelope, where Node's own 417 has no body or headers; the connection
 * is closed, since the client may or may not send the body it announced.
 */
export function expectationEnvelope(app: FastifyInstance, response: ServerResponse): void {
  const { headers, body } = refusalBeforeFastify(app, 417, 'Of Expect, only 100-continue is supported');
  response.writeHead(417, headers).end(body);
}

/**
 * An answer Node gives before Fastify has the request: the envelope, what every answer carries, and a fresh request id
 * that the log line carries too.
 */
function refusalBeforeFastify(app: FastifyInstance, status: number, message: string, code?: string) {
  const id = randomUUID();
  app.log.info({ reqId: id, code }, `request refused before routing: ${status} ${message}`);
  const body = JSON.stringify(errorBody('request', message));
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
    [REQUEST_ID_HEADER]: id,
    ...ANSWER_HEADERS,
  };
  return { headers, body };
}

/** The router's refusals of a URL path, which it answers before any route or error handler. */
const ROUTER_ERRORS: Record<string, [status: number, message: string]> = {
  FST_ERR_BAD_URL: [400, 'The URL path is not valid percent-encoding'],
  FST_ERR_MAX_PARAM_LENGTH: [414, 'A part of the URL path is longer than 100 characters'],
};

/**
 * Fastify's `frameworkErrors`: the router refuses a path it cannot decode, or one with a part longer than its
 * `maxParamLength`, with a body of its own; this gives those answers the envelope. Anything else it reports
 * (an async constraint that failed) is ours to fix: a 500 like any other.
 */
export function frameworkErrorEnvelope(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // Neither onRequest nor onSend hooks run for the router's refusals.
  reply.header(REQUEST_ID_HEADER, request.id);
  secureAnswer(request, reply);
  const known = ROUTER_ERRORS[error.code];
  if (known) {
    reply.code(known[0]).send(errorBody('request', known[1]));
    return;
  }
  answerUnexpected(error, request, reply);
}

/** A 500 that shows the client a request id to quote and the operator the error, never the client a stack. */
function answerUnexpected(error: Error, request: FastifyRequest, reply: FastifyReply): void {
  request.log.error({ err: error }, 'unexpected error');
  reply.code(500).send(errorBody('server', 'Internal server error', { request_id: request.id }));
}

/** Every error, ours or Fastify's, leaves in the documented envelope; a 500 never shows a stack. */
export default fp(async (app: FastifyInstance) => {
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody('route', `Not found: ${request.method} ${request.url.split('?')[0]}`));
  });

  app.setErrorHandler((error: FastifyError | DomainError, request, reply) => {
    if (error instanceof DomainError) {
      reply.code(httpStatus(error)).headers(error.headers).send(error.body);
      return;
    }
    if (error.validation) {
      const field = error.validation[0]?.instancePath?.replace(/^\//, '') || error.validationContext || 'request';
      reply.code(400).send(errorBody(field, error.message));
      return;
    }
    if (error.code?.startsWith('FST_') && error.statusCode && error.statusCode < 500) {
      const field = error.code.includes('MULTIPART') || error.code.includes('FILE') ? 'image' : 'request';
      // An upload over a multipart limit is the documented 422 `image`; a JSON body over Fastify's bodyLimit stays
      // a 413.
      reply
        .code(field === 'image' && error.statusCode === 413 ? 422 : error.statusCode)
        .send(errorBody(field, error.message));
      return;
    }
    if (answeredDatabaseOutage(error, request, reply)) {
      reply.send(errorBody('database', 'The database is unavailable. Try again shortly.'));
      return;
    }
    answerUnexpected(error, request, reply);
  });
});

/**
 * A database outage is a 503 with Retry-After, logged as one line without a stack trace (one per
 * request during an outage); the caller sends the body (JSON envelope or dashboard page).
 */
export function answeredDatabaseOutage(error: Error, request: FastifyRequest, reply: FastifyReply): boolean {
  if (!isDatabaseUnavailable(error)) return false;
  request.log.warn(`database unavailable: ${error.message}`);
  reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS));
  return true;
}
