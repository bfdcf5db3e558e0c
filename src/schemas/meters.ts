import { Type } from '@sinclair/typebox';
import { ANOMALY_KINDS } from '../meters/anomalies.ts';
import { CONSUMPTION_DAYS } from '../meters/consumption.ts';
import { HISTORY_MAX_LIMIT } from '../meters/history.ts';
import { METER_LIST_MAX_LIMIT } from '../meters/meter-list.ts';
import { CORRECTIONS_PER_SUBMISSION } from '../meters/corrections.ts';
import {
  FRACTIONAL_WHEELS_LIMIT,
  MAX_FLOW_LIMIT,
  METER_POINTS_PER_ACCOUNT,
  WHOLE_WHEELS_LIMIT,
} from '../meters/meter-points.ts';
import { METER_ID_PATTERN } from '../pipeline/identify-meter.ts';
import {
  errorEnvelope,
  MeterReferenceParams,
  READING_EXAMPLE,
  ReferenceId,
  SERVER_ERROR,
  Submission,
} from './meter-reading.ts';
import { named, ref } from './named.ts';

/** Documentation only: the routes check meter_id themselves, to answer 422 `meter_id` rather than 400. */
const MeterParams = Type.Object({
  meter_id: Type.String({
    pattern: METER_ID_PATTERN.source,
    description: 'Your identifier of the physical meter (a `/` in it is sent percent-encoded: `SN%2F4711`)',
  }),
});

/** A submission of a meter, corrected: what its history and a correction show (as Submission). */
const CORRECTED_SUBMISSION_EXAMPLE = {
  reference_id: '7c0e4a4e-4b1f-4a52-9a3f-2d1f0e6c9b11',
  status: 'completed',
  created_at: '2026-11-22T10:14:58.120Z',
  finished_at: '2026-11-22T10:15:00.000Z',
  ...READING_EXAMPLE,
  reading: '00600.494',
  value: 600.494,
  confidence: 18,
  plausibility: {
    status: 'implausible',
    reference: '00606.100',
    reference_source: 'reading',
    window: { min: 606.099, max: 666.1 },
    reason: 'The reading 600.494 is below the reference reading 00606.100',
  },
  correction: {
    reading: '00606.494',
    value: 606.494,
    corrected_by: 'api key 3',
    corrected_at: '2026-11-22T10:20:00.000Z',
  },
};

const MeterHistoryPage = Type.Object(
  {
    meter_id: Type.String(),
    readings: Type.Array(ref(Submission), {
      description: 'Every submission of the meter (pending and failed too), newest first',
    }),
    has_more: Type.Boolean({ description: 'The meter has older submissions' }),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description: 'For `starting_after`; null on the last page',
    }),
  },
  {
    $id: 'MeterHistoryPage',
    description: 'A page of the meter’s history',
    examples: [{ meter_id: 'SN-4711', has_more: true, next_cursor: 'bTQy', readings: [CORRECTED_SUBMISSION_EXAMPLE] }],
  },
);

const nullableNumber = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });

/** A meter that needs a visit, as the meters list shows it and `meter.anomaly` sends it (src/meters/anomalies.ts). */
export const MeterAnomaly = Type.Object(
  {
    kind: Type.Union(
      ANOMALY_KINDS.map((kind) => Type.Literal(kind)),
      {
        description:
          '`stopped`: its trusted readings stand still while they keep arriving and its history says it is used; `backwards`: a trusted reading below the one before; `leak`: far more used over the span than usual',
      },
    ),
    since: Type.String({
      format: 'date-time',
      description:
        'When it started, by the meter’s readings: the first reading at the value it stopped at, the reading that dropped, the start of the leak’s span',
    }),
    reference_id: Type.String({ format: 'uuid', description: 'The submission whose trusted reading ends the span' }),
    span: Type.Object(
      {
        from: Type.String({ format: 'date-time' }),
        to: Type.String({ format: 'date-time' }),
        days: Type.Number(),
      },
      { description: 'The two trusted readings it was found between (when the meter showed them)' },
    ),
    figures: Type.Object({
      from_reading: Type.String(),
      to_reading: Type.String(),
      consumption_m3: Type.Number({ description: 'to_reading less from_reading: negative when it ran backwards' }),
      usual_m3_per_day: nullableNumber(
        'Its usual daily consumption before the span, from its own trusted history; null for `backwards`',
      ),
      usual_spread_m3_per_day: nullableNumber('How much that varies (standard deviation); null for `backwards`'),
      usual_m3: nullableNumber('What it usually uses over the span (usual_m3_per_day × days); null for `backwards`'),
      limit_m3: nullableNumber(
        '`leak` only: consumption over the span above this is a leak (ANOMALY_LEAK_FACTOR); null otherwise',
      ),
    }),
  },
  { $id: 'MeterAnomaly', description: 'Why a meter needs a visit' },
);

const MeterSummary = Type.Object(
  {
    meter_id: Type.String(),
    created_at: Type.String({ format: 'date-time', description: 'When the meter was first named' }),
    last_trusted_reading: Type.Union(
      [
        Type.Object({
          reading: Type.String(),
          value: Type.Number(),
          source: Type.Union([Type.Literal('reading'), Type.Literal('correction'), Type.Literal('manual')], {
            description:
              'The machine’s reading, a person’s correction or confirmation, or a reading a person entered without a photo',
          }),
          read_at: Type.String({ format: 'date-time', description: 'When its photo was submitted' }),
          reference_id: ReferenceId,
        }),
        Type.Null(),
      ],
      {
        description:
          'The newest submission’s correction, else its reading when that was not implausible; null: none yet',
      },
    ),
    consumption_30_days_m3: Type.Union([Type.Number(), Type.Null()], {
      description: `The last trusted reading of the last ${CONSUMPTION_DAYS} days less the last one before them; null when either is missing`,
    }),
    waiting_for_review: Type.Integer({
      minimum: 0,
      description:
        'How many of its submissions need review now (`needs_review: true`): those `GET /api/meter-readings?meter_id=…&needs_review=true` lists',
    }),
    anomaly: Type.Union([ref(MeterAnomaly), Type.Null()], {
      description: 'Why the meter needs a visit: its newest open episode; null when none is open',
    }),
  },
  { $id: 'Meter', description: 'A meter of the account, with its last trusted reading and consumption' },
);

const MeterListPage = Type.Object(
  {
    data: Type.Array(ref(MeterSummary), { description: 'In meter_id order (byte by byte)' }),
    has_more: Type.Boolean({ description: 'More meters match' }),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description: 'The meter_id of the last item, for `starting_after`; null on the last page',
    }),
  },
  {
    $id: 'MeterPage',
    description: 'A page of the account’s meters',
    examples: [
      {
        data: [
          {
            meter_id: 'SN-4711',
            created_at: '2026-09-01T08:00:00.000Z',
            last_trusted_reading: {
              reading: '00606.494',
              value: 606.494,
              source: 'correction',
              read_at: '2026-11-22T10:14:58.120Z',
              reference_id: '7c0e4a4e-4b1f-4a52-9a3f-2d1f0e6c9b11',
            },
            consumption_30_days_m3: 9.18,
            waiting_for_review: 1,
            anomaly: null,
          },
        ],
        has_more: false,
        next_cursor: null,
      },
    ],
  },
);

const MeterIdPattern = { pattern: METER_ID_PATTERN.source };

/** The query of GET /api/meters. */
export const MetersQuery = Type.Object(
  {
    meter_id_prefix: Type.Optional(
      Type.String({ ...MeterIdPattern, description: 'Only meters whose meter_id starts with this' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: METER_LIST_MAX_LIMIT, default: 20 })),
    starting_after: Type.Optional(
      Type.String({ ...MeterIdPattern, description: 'A meter_id from the previous page (its `next_cursor`)' }),
    ),
  },
  { additionalProperties: false },
);

const layoutFields = {
  whole_wheels: Type.Integer({
    minimum: 1,
    maximum: WHOLE_WHEELS_LIMIT,
    description: 'Whole-unit (black) wheels, left of the point',
  }),
  fractional_wheels: Type.Integer({
    minimum: 0,
    maximum: FRACTIONAL_WHEELS_LIMIT,
    description: 'Fractional (red) wheels, right of the point',
  }),
  unit: Type.Literal('m3', {
    description: 'What a whole-unit wheel counts: m³, the unit the service reads, judges and bills in',
  }),
};
export const Layout = Type.Object(layoutFields, {
  $id: 'MeterLayout',
  additionalProperties: false,
  description: 'A counter layout: `00037.902` is 5 whole and 3 fractional wheels',
});

const MeterSettings = Type.Object(
  {
    meter_id: Type.String(),
    max_flow_m3_per_hour: Type.Union([Type.Number(), Type.Null()], {
      description: 'The meter’s own; null: the account’s applies',
    }),
    effective_max_flow_m3_per_hour: Type.Number({ description: 'The max flow its plausibility windows use' }),
    layout: Type.Union([ref(Layout), Type.Null()], {
      description: 'The layout set for the meter; null: none, its readings show it',
    }),
    effective_layout: Type.Union(
      [
        Type.Object({
          ...layoutFields,
          shown_by: Type.Union([Type.String(), Type.Null()], {
            description: 'The trusted reading (written with its leading zeros) that shows it; null: set for the meter',
          }),
        }),
        Type.Null(),
      ],
      {
        description:
          'The layout its next reading is judged in (a submission’s own `previous_reading` may show another); null: not known',
      },
    ),
  },
  {
    $id: 'MeterSettings',
    description: 'The meter’s settings',
    examples: [
      {
        meter_id: 'SN-4711',
        max_flow_m3_per_hour: 6,
        effective_max_flow_m3_per_hour: 6,
        layout: null,
        effective_layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3', shown_by: '00606.494' },
      },
    ],
  },
);

const AUTHORIZATION_ERROR = '`authorization`: bad or inactive key';
const BODY_ERROR = '`request`: the body is not valid JSON';
const UNKNOWN_KEY_ERROR = 'a key the body does not take, named';
const MEDIA_TYPE_ERROR =
  '`request`: the body is not `application/json`, or it has a `Content-Encoding` other than `identity`';

const tags = ['Meters'];

/** Route schema of GET /api/meters. */
export const MeterList = {
  tags,
  operationId: 'listMeters',
  summary: 'The account’s meters, with their last trusted reading, consumption and readings waiting for review',
  description: 'Not counted as usage; works without a current subscription.',
  querystring: MetersQuery,
  response: {
    200: ref(MeterListPage),
    422: errorEnvelope(
      `${AUTHORIZATION_ERROR}, or a query parameter (\`limit\`, \`starting_after\`, \`meter_id_prefix\`) malformed or unknown`,
    ),
    500: errorEnvelope(SERVER_ERROR),
  },
};

/** The query of GET /api/meters/{meter_id}/readings. */
export const MeterHistoryQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: HISTORY_MAX_LIMIT, default: 20 })),
    starting_after: Type.Optional(Type.String({ description: 'The `next_cursor` of the previous page' })),
    cursor: Type.Optional(
      Type.String({ deprecated: true, description: 'The old name of `starting_after`, still accepted' }),
    ),
  },
  { additionalProperties: false },
);

/** Route schema of GET /api/meters/{meter_id}/readings; the route checks meter_id itself (422 `meter_id`). */
export const MeterHistory = {
  tags,
  operationId: 'listMeterHistory',
  summary: 'A meter’s submissions, newest first',
  description: 'Not counted as usage; works without a current subscription.',
  querystring: MeterHistoryQuery,
  documentation: { params: MeterParams },
  response: {
    200: ref(MeterHistoryPage),
    404: errorEnvelope('`meter_id`: no meter of this account has this meter_id'),
    422: errorEnvelope(
      `${AUTHORIZATION_ERROR}, \`meter_id\` malformed, or a query parameter (\`limit\`, \`starting_after\`, \`cursor\`) malformed or unknown; \`cursor\`: given with \`starting_after\``,
    ),
    500: errorEnvelope(SERVER_ERROR),
  },
};

/**
 * Route schema of PATCH /api/meters/{meter_id}; its body is checked by the route (422 `max_flow_m3_per_hour`, `layout`,
 * `request`).
 */
export const MeterSettingsChange = {
  tags,
  operationId: 'updateMeterSettings',
  summary: 'Set a meter’s max flow for its plausibility window, or its counter layout',
  description:
    `Sets the settings the body gives (at least one). Not counted as usage, but needs an active subscription. Creates the meter if it has had no photo yet, while the account has fewer than ${METER_POINTS_PER_ACCOUNT} meters. ` +
    'A reading in another layout than the meter’s is `implausible` (needs review), whichever reader read it; the local reader reads within it.',
  documentation: {
    params: MeterParams,
    body: Type.Object(
      {
        max_flow_m3_per_hour: Type.Optional(
          Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: MAX_FLOW_LIMIT }), Type.Null()], {
            description: 'In m³/h; null: the account’s default again',
          }),
        ),
        layout: Type.Optional(
          Type.Union([ref(Layout), Type.Null()], {
            description: 'The counter’s wheels; null: the layout its readings show again',
          }),
        ),
      },
      {
        additionalProperties: false,
        examples: [{ max_flow_m3_per_hour: 6 }, { layout: { whole_wheels: 5, fractional_wheels: 3, unit: 'm3' } }],
      },
    ),
  },
  response: {
    200: ref(MeterSettings),
    400: errorEnvelope(BODY_ERROR),
    415: errorEnvelope(MEDIA_TYPE_ERROR),
    422: errorEnvelope(
      `${AUTHORIZATION_ERROR}; \`subscription\`: none active; \`meters\`: a new meter, and the account already has ${METER_POINTS_PER_ACCOUNT}; \`meter_id\`, \`max_flow_m3_per_hour\` or \`layout\` (its wheels or its unit) malformed; \`request\`: the body sets neither; or ${UNKNOWN_KEY_ERROR} (inside \`layout\`: \`layout.<key>\`)`,
    ),
    500: errorEnvelope(SERVER_ERROR),
  },
};

/**
 * Route schema of POST /api/meter-reading/{reference_id}/correction; its body is checked by the route (422 `reading`).
 */
export const ReadingCorrection = {
  tags,
  operationId: 'correctMeterReading',
  summary: 'Correct or confirm a submission’s reading',
  description: `Not counted as usage; works without a current subscription. The corrected value becomes the meter’s reference for its next photo; the machine’s reading stays. At most ${CORRECTIONS_PER_SUBMISSION} corrections per submission.`,
  params: MeterReferenceParams,
  documentation: {
    body: Type.Object(
      {
        reading: Type.Union([Type.String(), Type.Number({ minimum: 0 })], {
          description: 'Digits with at most one decimal point, e.g. "00606.494"; a number is taken as its digits',
        }),
      },
      { additionalProperties: false, examples: [{ reading: '00606.494' }] },
    ),
  },
  response: {
    200: ref(Submission, { description: 'The submission, with the correction' }),
    400: errorEnvelope(BODY_ERROR),
    404: errorEnvelope('`reference_id`: no submission of this account has this reference'),
    409: errorEnvelope('`reference_id`: the submission is still being read'),
    415: errorEnvelope(MEDIA_TYPE_ERROR),
    422: errorEnvelope(
      `${AUTHORIZATION_ERROR}; \`corrections\`: the submission has ${CORRECTIONS_PER_SUBMISSION} already; \`reading\` malformed; or ${UNKNOWN_KEY_ERROR}`,
    ),
    500: errorEnvelope(SERVER_ERROR),
  },
};

/** Route schema of POST /api/meter-reading/{reference_id}/confirmation: no body. */
export const ReadingConfirmation = {
  tags,
  operationId: 'confirmMeterReading',
  summary: 'Confirm a submission’s reading as the machine read it',
  description:
    'Not counted as usage; works without a current subscription. Stored as a correction equal to the machine’s reading (so `correction` shows who confirmed and when): `needs_review` becomes false, and a flagged reading becomes the meter’s reference, which releases a meter whose reference was wrong. ' +
    `Counts towards the ${CORRECTIONS_PER_SUBMISSION} corrections a submission may have. No body.`,
  params: MeterReferenceParams,
  response: {
    200: ref(Submission, { description: 'The submission, with the confirmation as its correction' }),
    404: errorEnvelope('`reference_id`: no submission of this account has this reference'),
    409: errorEnvelope(
      '`reference_id`: the submission is still being read, or it failed and has no reading to confirm',
    ),
    422: errorEnvelope(
      `${AUTHORIZATION_ERROR}; \`corrections\`: the submission has ${CORRECTIONS_PER_SUBMISSION} already`,
    ),
    500: errorEnvelope(SERVER_ERROR),
  },
};

/**
 * Route schema of POST /api/meters/{meter_id}/readings; its body is checked by the route (422 `reading`, `read_at`).
 */
export const ManualReading = {
  tags,
  operationId: 'addManualReading',
  summary: 'Record a reading a person took without a photo',
  description:
    'A manual reading (or one from another system): stored as a completed submission of the meter with `model: "manual"`, confidence 100 and `needs_review: false`, at its `read_at` (its `created_at`). ' +
    'Trusted as the meter’s reference and in its usual consumption; in the history and the chart. Not judged against a window, not counted as usage, no webhook. ' +
    `Needs an active subscription; creates the meter if it has none yet, while the account has fewer than ${METER_POINTS_PER_ACCOUNT} meters.`,
  documentation: {
    params: MeterParams,
    body: Type.Object(
      {
        reading: Type.Union([Type.String(), Type.Number({ minimum: 0 })], {
          description:
            'As the dial shows it, in the meter’s layout (e.g. 5 whole and 3 fractional wheels: "00123.456", or "123.456")',
        }),
        read_at: Type.String({
          description: 'When the meter showed it: a date, or a date-time with its offset; not in the future',
        }),
      },
      { additionalProperties: false, examples: [{ reading: '00123.456', read_at: '2026-10-01T08:00:00Z' }] },
    ),
  },
  response: {
    201: ref(Submission, { description: 'The manual reading, stored as a completed submission' }),
    400: errorEnvelope(BODY_ERROR),
    415: errorEnvelope(MEDIA_TYPE_ERROR),
    422: errorEnvelope(
      `${AUTHORIZATION_ERROR}; \`subscription\`: none active; \`meters\`: a new meter, and the account has ${METER_POINTS_PER_ACCOUNT}; \`meter_id\` malformed; \`reading\` malformed or in another layout than the meter’s (its setting, else its trusted readings written with their leading zeros); \`read_at\` malformed or in the future; or ${UNKNOWN_KEY_ERROR}`,
    ),
    500: errorEnvelope(SERVER_ERROR),
  },
};

named(MeterHistoryPage, MeterAnomaly, MeterSummary, MeterListPage, Layout, MeterSettings);
