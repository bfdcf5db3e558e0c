import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { Static } from '@sinclair/typebox';
import { instantField } from '../../instant.ts';
import { meterResult, meterResults, type SubmissionFilter } from '../../meter-results.ts';
import { authenticate } from '../../pipeline/authenticate.ts';
import { METER_ID_RULE } from '../../pipeline/identify-meter.ts';
import {
  errorEnvelope,
  INPUT_ERROR,
  MeterListQuery,
  MeterReferenceParams,
  MeterResult,
  MeterResultList,
  MeterStatus,
  PlausibilityStatus,
  SERVER_ERROR,
} from '../../schemas/meter-reading.ts';
import { queryError, rejectUnknownParameters } from './query.ts';

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
      preValidation: rejectUnknownParameters(MeterListQuery),
      schema: {
        summary: 'The account’s submissions, newest first',
        tags: ['Readings'],
        querystring: MeterListQuery,
        response: {
          200: MeterResultList,
          422: errorEnvelope(
            '`authorization`: bad or inactive key; or a query parameter, named, that is malformed or unknown (`starting_after`: not a reference of this account)',
          ),
          500: errorEnvelope(SERVER_ERROR),
        },
      },
    },
    async (request) => {
      if (request.validationError) throw queryError(request.validationError, LIST_QUERY_RULES);
      const { limit, starting_after: startingAfter } = request.query;
      return meterResults(db, account(request), listFilter(request.query), { limit: limit ?? DEFAULT_LIST_LIMIT, startingAfter });
    },
  );
};

export default meterResultRoutes;

function account(request: FastifyRequest): string {
  if (!request.accountId) throw new Error('the onRequest authentication did not run');
  return request.accountId;
}

const CREATED_AFTER_RULE = 'created_after must be an RFC 3339 date-time with its offset, such as 2026-11-01T00:00:00Z';
const CREATED_BEFORE_RULE = 'created_before must be an RFC 3339 date-time with its offset, such as 2026-12-01T00:00:00Z';

/** What each list parameter must be, in words a client can act on: Ajv's own messages name schema keywords, and a status gets one per allowed value. */
const LIST_QUERY_RULES: Record<string, string> = {
  status: `status must be one of ${MeterStatus.anyOf.map((member) => member.const).join(', ')}`,
  created_after: CREATED_AFTER_RULE,
  created_before: CREATED_BEFORE_RULE,
  meter_id: METER_ID_RULE,
  plausibility: `plausibility must be one of ${PlausibilityStatus.anyOf.map((member) => member.const).join(', ')}`,
  needs_review: 'needs_review must be true or false',
  limit: `limit must be an integer from 1 to ${MeterListQuery.properties.limit.maximum}`,
  starting_after: 'starting_after must be the next_cursor of the previous page (a reference_id)',
};

/** The list's filter from its query parameters. */
function listFilter(query: Static<typeof MeterListQuery>): SubmissionFilter {
  return {
    status: query.status,
    plausibility: query.plausibility,
    needsReview: query.needs_review,
    meterId: query.meter_id,
    createdAfter: query.created_after === undefined ? undefined : instantField(query.created_after, 'created_after', CREATED_AFTER_RULE),
    createdBefore: query.created_before === undefined ? undefined : instantField(query.created_before, 'created_before', CREATED_BEFORE_RULE),
  };
}
