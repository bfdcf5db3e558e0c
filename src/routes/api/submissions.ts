import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type { Static } from '@sinclair/typebox';
import { instantField } from '../../instant.ts';
import { DomainError } from '../../errors.ts';
import { findSubmission, listSubmissions, type SubmissionFilter } from '../../submissions.ts';
import { billingExport } from '../../meters/billing-export.ts';
import { authenticate } from '../../pipeline/authenticate.ts';
import { METER_ID_RULE } from '../../pipeline/identify-meter.ts';
import {
  errorEnvelope,
  INPUT_ERROR,
  MeterListQuery,
  MeterReadingsCsv,
  MeterReferenceParams,
  Submission,
  SubmissionPage,
  SubmissionStatus,
  PlausibilityStatus,
  SERVER_ERROR,
} from '../../schemas/meter-reading.ts';
import { ref } from '../../schemas/named.ts';
import { checkedQuery } from './query.ts';

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
const submissionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps;
  app.decorateRequest('accountId', null);
  app.addHook('onRequest', async (request) => {
    request.accountId = (await authenticate(db, request.headers.authorization)).accountId;
  });

  app.get(
    '/meter-reading/:reference_id',
    {
      schema: {
        operationId: 'getMeterReading',
        summary: 'A submission’s status and result',
        tags: ['Readings'],
        params: MeterReferenceParams,
        response: {
          200: ref(Submission, { description: 'The submission' }),
          404: errorEnvelope('`reference_id`: no submission of this account has this reference (or it is not a UUID)'),
          422: errorEnvelope(INPUT_ERROR),
          500: errorEnvelope(SERVER_ERROR),
        },
      },
    },
    async (request) => findSubmission(db, account(request), request.params.reference_id),
  );

  app.get(
    '/meter-readings',
    checkedQuery(
      {
        operationId: 'listMeterReadings',
        summary: 'The account’s submissions, newest first; as CSV, the billing export',
        tags: ['Readings'],
        querystring: MeterListQuery,
        response: {
          200: {
            description:
              'A page of submissions; with `Accept: text/csv` or `format=csv`, every matching submission as CSV, streamed',
            content: { 'application/json': { schema: ref(SubmissionPage) }, 'text/csv': { schema: MeterReadingsCsv } },
          },
          422: errorEnvelope(
            '`authorization`: bad or inactive key; or a query parameter, named, that is malformed or unknown (`starting_after`: not a reference of this account)',
          ),
          500: errorEnvelope(SERVER_ERROR),
        },
      },
      LIST_QUERY_RULES,
    ),
    async (request, reply) => {
      const { limit, starting_after: startingAfter } = request.query;
      if (wantsCsv(request.query.format, request.headers.accept)) {
        // The raw query: Ajv fills in limit's default.
        const given = new URL(request.url, 'http://localhost').searchParams;
        const paging = ['limit', 'starting_after'].find((name) => given.has(name));
        if (paging) throw new DomainError('invalid', paging, `The CSV export has no pages: leave out ${paging}`);
        // The type provider types a body by the JSON schema; a stream is sent as it comes, unserialized.
        return reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', 'attachment; filename="meter-readings.csv"')
          .send(billingExport(db, account(request), listFilter(request.query)) as never);
      }
      return listSubmissions(db, account(request), listFilter(request.query), {
        limit: limit ?? DEFAULT_LIST_LIMIT,
        startingAfter,
      });
    },
  );
};

export default submissionRoutes;

function account(request: FastifyRequest): string {
  if (!request.accountId) throw new Error('the onRequest authentication did not run');
  return request.accountId;
}

const CREATED_AFTER_RULE = 'created_after must be an RFC 3339 date-time with its offset, such as 2026-11-01T00:00:00Z';
const CREATED_BEFORE_RULE =
  'created_before must be an RFC 3339 date-time with its offset, such as 2026-12-01T00:00:00Z';

/**
 * What each list parameter must be, in words a client can act on: Ajv's own messages name schema keywords, and a status
 * gets one per allowed value.
 */
const LIST_QUERY_RULES = {
  status: `status must be one of ${SubmissionStatus.anyOf.map((member) => member.const).join(', ')}`,
  created_after: CREATED_AFTER_RULE,
  created_before: CREATED_BEFORE_RULE,
  meter_id: METER_ID_RULE,
  plausibility: `plausibility must be one of ${PlausibilityStatus.anyOf.map((member) => member.const).join(', ')}`,
  needs_review: 'needs_review must be true or false',
  limit: `limit must be an integer from 1 to ${MeterListQuery.properties.limit.maximum}`,
  starting_after: 'starting_after must be the next_cursor of the previous page (a reference_id)',
  format: 'format must be json or csv',
};

/**
 * CSV when `format=csv`, or without `format` when Accept names text/csv before application/json (q-values aside:
 * clients name one).
 */
function wantsCsv(format: 'json' | 'csv' | undefined, accept: string | undefined): boolean {
  if (format) return format === 'csv';
  const types = (accept ?? '').split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  const csv = types.indexOf('text/csv');
  const json = types.indexOf('application/json');
  return csv >= 0 && (json < 0 || csv < json);
}

/** The list's filter from its query parameters. */
function listFilter(query: Static<typeof MeterListQuery>): SubmissionFilter {
  return {
    status: query.status,
    plausibility: query.plausibility,
    needsReview: query.needs_review,
    meterId: query.meter_id,
    createdAfter:
      query.created_after === undefined
        ? undefined
        : instantField(query.created_after, 'created_after', CREATED_AFTER_RULE),
    createdBefore:
      query.created_before === undefined
        ? undefined
        : instantField(query.created_before, 'created_before', CREATED_BEFORE_RULE),
  };
}
