import type { TObject } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { cut, DomainError, quoted } from '../../errors.ts';

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

/**
 * The route options of every API route that reads a JSON body, which the route checks itself (its own 422s): `schema`,
 * the body refused under a Content-Encoding, and a key its documented body does not have refused, named. Ajv is not
 * asked: with `additionalProperties: false` it drops the key (Fastify's removeAdditional), and a misspelt setting
 * would change nothing and answer 200.
 */
export function checkedBody<S extends { documentation: { body: TObject } }>(schema: S) {
  const known = Object.keys(schema.documentation.body.properties);
  return {
    schema,
    onRequest: async (request: FastifyRequest) => requireIdentityEncoding(request, 'the JSON body'),
    preValidation: async (request: FastifyRequest) => {
      if (isRecord(request.body)) refuseUnknownKeys(request.body, known);
    },
  };
}

/**
 * A 422 naming the first key of `value` that is not `known`: at the top of the body, or inside its member `owner`
 * (`layout.foo`).
 */
export function refuseUnknownKeys(value: object, known: readonly string[], owner?: string): void {
  const unknown = Object.keys(value).find((key) => !known.includes(key));
  if (unknown === undefined) return;
  throw new DomainError(
    'invalid',
    owner === undefined ? cut(unknown) : `${owner}.${cut(unknown)}`,
    `Unknown field: ${owner ?? 'the body'} takes ${known.join(', ')}`,
  );
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
