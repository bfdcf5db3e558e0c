import type { FastifyRequest } from 'fastify';
import { DomainError, quoted } from '../../errors.ts';

/**
 * A body is read as it was sent: one under a Content-Encoding other than identity (gzip, br…) is refused from the
 * headers, before it is read, rather than taken as it comes (a compressed one misread, an uncompressed one under a
 * header that says otherwise). `what` names the body in the message.
 */
export function requireIdentityEncoding(request: FastifyRequest, what: string): void {
  const encoding = (request.headers['content-encoding'] ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .find((coding) => coding !== '' && coding !== 'identity');
  if (encoding !== undefined) {
    throw new DomainError(
      'invalid',
      'request',
      `Content-Encoding ${quoted(encoding)} is not accepted: send ${what} uncompressed`,
      { status: 415 },
    );
  }
}

/** The route options of every API route that reads a JSON body: `schema`, and the body refused as it was sent. */
export function checkedBody<S extends object>(schema: S) {
  return {
    schema,
    onRequest: async (request: FastifyRequest) => requireIdentityEncoding(request, 'the JSON body'),
  };
}
