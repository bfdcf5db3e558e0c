import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../../errors.ts';
import { instantField } from '../../instant.ts';
import { meterResult, meterResults } from '../../meter-results.ts';
import { authenticate } from '../../pipeline/authenticate.ts';
import {
  errorEnvelope,
  INPUT_ERROR,
  MeterListQuery,
  MeterReferenceParams,
  MeterResult,
  MeterResultList,
  MeterStatus,
  SERVER_ERROR,
} from '../../schemas/meter-reading.ts';

declare module 'fastify' {
  interface FastifyRequest {
    accountId: string | null;
  }
}

const DEFAULT_LIST_LIMIT = 20;

/**
 * Results by reference, for clients that lost a webhook. Only the key is checked: reading past
 * results is not usage, and stays possible after the subscription or the month's quota ran out.
 */
const meterResultRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps;
  app.decorateRequest('accountId', null);
  app.addHook('onRequest', async (request) => {
    request.accountId = (await authenticate(db, request.headers.authorization)).accountId;
  });

  app.get(
    '/meter-reading/:reference_id',
    {
      schema: {
        summary: 'A submission’s status and result',
        tags: ['Readings'],
        params: MeterReferenceParams,
        response: {
          200: MeterResult,
          404: errorEnvelope('`reference_id`: no submission of this account has this reference (or it is not a UUID)'),
          422: errorEnvelope(INPUT_ERROR),
          500: errorEnvelope(SERVER_ERROR),
        },
      },
    },
    async (request) => meterResult(db, account(request), request.params.reference_id),
  );

  app.get(
    '/meter-readings',
    {
      attachValidation: true,
      schema: {
        summary: 'The account’s submissions, newest first',
        tags: ['Readings'],
        querystring: MeterListQuery,
        response: { 200: MeterResultList, 422: errorEnvelope(INPUT_ERROR), 500: errorEnvelope(SERVER_ERROR) },
      },
    },
    async (request) => {
      if (request.validationError) throw queryError(request.validationError);
      const { status, created_after: createdAfter, limit, starting_after: startingAfter } = request.query;
      return meterResults(db, account(request), {
        status,
        createdAfter: createdAfter === undefined ? undefined : instantField(createdAfter, 'created_after', CREATED_AFTER_RULE),
        limit: limit ?? DEFAULT_LIST_LIMIT,
        startingAfter,
      });
    },
  );
};

export default meterResultRoutes;

function account(request: FastifyRequest): string {
  if (!request.accountId) throw new Error('the onRequest authentication did not run');
  return request.accountId;
}

const CREATED_AFTER_RULE = 'created_after must be an RFC 3339 date-time with its offset, such as 2026-11-01T00:00:00Z';

/** What each list parameter must be, in words a client can act on: Ajv's own messages name schema keywords, and a status gets one per allowed value. */
const LIST_QUERY_RULES: Record<string, string> = {
  status: `status must be one of ${MeterStatus.anyOf.map((member) => member.const).join(', ')}`,
  created_after: CREATED_AFTER_RULE,
  limit: `limit must be an integer from 1 to ${MeterListQuery.properties.limit.maximum}`,
  starting_after: 'starting_after must be the next_cursor of the previous page (a reference_id)',
};

/** A bad query parameter is a 422 naming the parameter, like every other input error of the API. */
function queryError(error: Error & { validation?: Array<{ instancePath: string; params?: Record<string, unknown> }> }): DomainError {
  const issue = error.validation?.[0];
  const field = issue?.instancePath.replace(/^\//, '') || String(issue?.params?.missingProperty ?? 'query');
  return new DomainError('invalid', field, LIST_QUERY_RULES[field] ?? error.message.replace(/^querystring\/\S+ /, ''));
}
