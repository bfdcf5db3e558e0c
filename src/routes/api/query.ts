import type { TObject } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../../errors.ts';

type ValidationError = Error & { validation?: Array<{ instancePath: string; params?: Record<string, unknown> }> };

/** An integer as a query gives it: decimal digits, no sign, no leading zero. */
const PLAIN_INTEGER = /^(0|[1-9][0-9]*)$/;

/**
 * The route options of every API GET route that takes a query: `schema` with its `querystring`
 * validated, a parameter the route does not know refused, and each refusal a 422 naming the
 * parameter in the route's own words (`rules`, one per parameter), like every other input error of
 * the API. Ajv would otherwise drop an unknown parameter (Fastify's removeAdditional), and a
 * misspelt filter would silently list everything; its own messages name schema keywords. An
 * integer parameter must be written as PLAIN_INTEGER: Ajv coerces with Number(), which takes
 * `0x5`, `1e1`, `+5`, ` 5` and `2.0`.
 */
export function checkedQuery<S extends { querystring: TObject }>(
  schema: S,
  rules: { [K in keyof S['querystring']['properties']]: string },
) {
  const known = Object.keys(schema.querystring.properties);
  const integers = known.filter((name) => schema.querystring.properties[name]?.type === 'integer');
  const ruleOf = rules as Record<string, string>;
  return {
    schema,
    attachValidation: true,
    preValidation: async (request: FastifyRequest) => {
      const query = request.query as Record<string, unknown>;
      const unknown = Object.keys(query).find((name) => !known.includes(name));
      if (unknown !== undefined)
        throw new DomainError('invalid', unknown, `Unknown query parameter: this list takes ${known.join(', ')}`);
      // A repeated one (an array) is Ajv's to refuse.
      const unwritten = integers.find((name) => typeof query[name] === 'string' && !PLAIN_INTEGER.test(query[name]));
      if (unwritten !== undefined) throw new DomainError('invalid', unwritten, ruleOf[unwritten]!);
    },
    preHandler: async (request: FastifyRequest) => {
      if (request.validationError) throw queryError(request.validationError, ruleOf);
    },
  };
}

function queryError(error: ValidationError, rules: Record<string, string>): DomainError {
  const issue = error.validation?.[0];
  const field = issue?.instancePath.replace(/^\//, '') || String(issue?.params?.missingProperty ?? 'query');
  return new DomainError('invalid', field, rules[field] ?? error.message.replace(/^querystring\/\S+ /, ''));
}
