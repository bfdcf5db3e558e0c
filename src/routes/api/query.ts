import type { TObject } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../../errors.ts';

/**
 * A preValidation hook that refuses a query parameter the route does not know, naming it: Ajv would
 * otherwise drop it (Fastify's removeAdditional), and a misspelt filter would silently list everything.
 */
export function rejectUnknownParameters(schema: TObject) {
  const known = Object.keys(schema.properties);
  return async (request: FastifyRequest) => {
    const unknown = Object.keys(request.query as Record<string, unknown>).find((name) => !known.includes(name));
    if (unknown !== undefined) throw new DomainError('invalid', unknown, `Unknown query parameter: this list takes ${known.join(', ')}`);
  };
}

type ValidationError = Error & { validation?: Array<{ instancePath: string; params?: Record<string, unknown> }> };

/**
 * A bad query parameter is a 422 naming the parameter, like every other input error of the API, with
 * the route's own words for it (`rules`): Ajv's messages name schema keywords.
 */
export function queryError(error: ValidationError, rules: Record<string, string>): DomainError {
  const issue = error.validation?.[0];
  const field = issue?.instancePath.replace(/^\//, '') || String(issue?.params?.missingProperty ?? 'query');
  return new DomainError('invalid', field, rules[field] ?? error.message.replace(/^querystring\/\S+ /, ''));
}
