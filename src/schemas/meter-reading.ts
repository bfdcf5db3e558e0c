import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { INSTANT_PATTERN } from '../instant.ts';
import { METER_ID_PATTERN } from '../pipeline/identify-meter.ts';
import { READING_PATTERN } from '../readers/reader.ts';
import { componentPointer, named, ref } from './named.ts';

/** A submission's reference_id: a UUID, which PostgreSQL generates. */
const REFERENCE_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether a path segment can be a reference_id at all: anything else is not found without a query (and never a cast
 * error).
 */
export function isReferenceId(value: string): boolean {
  return REFERENCE_ID_PATTERN.test(value);
}

export const ReferenceId = Type.String({
  format: 'uuid',
  description: 'The submission’s reference, returned when it was accepted',
});
export const SubmissionStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('processing'),
  Type.Literal('completed'),
  Type.Literal('failed'),
]);

const CounterBox = Type.Object(
  {
    corners: Type.Array(Type.Array(Type.Integer(), { minItems: 2, maxItems: 2, description: '[x, y]' }), {
      minItems: 4,
      maxItems: 4,
      description: 'Corners of the counter window as [x, y] pixels, clockwise from top-left',
    }),
    image_width: Type.Integer({ description: 'Width of the stored upright image the corners are in' }),
    image_height: Type.Integer({ description: 'Height of the stored upright image the corners are in' }),
  },
  {
    $id: 'CounterBox',
    description: 'Where the reader found the counter, in the pixel frame of the stored upright (normalised) image',
  },
);

const DigitConfidence = Type.Object(
  {
    digit: Type.Integer({ minimum: 0, maximum: 9 }),
    confidence: Type.Integer({ minimum: 0, maximum: 100 }),
  },
  { $id: 'DigitConfidence' },
);

export const PlausibilityStatus = Type.Union(
  (['ok', 'corrected', 'suspicious', 'implausible', 'unknown'] as const).map((status) => Type.Literal(status)),
  {
    description:
      "ok: inside the window. corrected: the decode within the window and the meter's layout differs from the free one. suspicious: inside the window, but far above " +
      "the meter's usual consumption (window.usual_max). implausible: nothing probable inside the window (the reading lies outside it, or the " +
      "reader's own readers read other whole units inside it), or a reading in another layout than the meter's; confidence capped at 20. " +
      'unknown: no reference (or a manual reading, not judged).',
  },
);

const Plausibility = Type.Object(
  {
    status: PlausibilityStatus,
    reference: Type.Union([Type.String(), Type.Null()], { description: 'The reading the window was built around' }),
    reference_source: Type.Union([
      Type.Literal('previous_reading'),
      Type.Literal('reading'),
      Type.Literal('correction'),
      Type.Literal('manual'),
      Type.Null(),
    ]),
    reference_submission: Type.Union([ReferenceId, Type.Null()], {
      description:
        "The reference_id of the submission the reference is the value of (null: this submission's own previous_reading, or none): the one to confirm or correct if the reference is wrong",
    }),
    window: Type.Union([
      Type.Object({
        min: Type.Number(),
        max: Type.Number({ description: 'The physical limit: reference + max flow × hours' }),
        usual_max: Type.Optional(
          Type.Number({
            description: "Above this the reading is suspicious: the meter's usual consumption since the reference",
          }),
        ),
      }),
      Type.Null(),
    ]),
    unconstrained_reading: Type.Optional(
      Type.String({ description: "The free decode, when the window or the meter's layout changed it" }),
    ),
    reason: Type.Optional(Type.String({ description: 'Why the reading is implausible or suspicious' })),
  },
  {
    $id: 'Plausibility',
    description: 'How the reading compares with what the meter can show since its reference (README "Plausibility")',
  },
);

/** needs_review, the one flag to bill on (docs/readings.md, "needs_review"; src/meters/review.ts). */
export const NeedsReview = Type.Boolean({
  description:
    "true: a person should look before this is billed (failed, implausible, suspicious, or less confident than the account's review threshold with its whole units not agreed); " +
    'false: consistent with everything the service knows, or a person gave, corrected or confirmed it',
});

/** What a completed reading says, the same in the sync response, GET and the webhook's `data`. */
export const ReadingFields = {
  reading: Type.String({ description: 'Digits as the dial shows them, e.g. "02390.276"' }),
  value: Type.Number(),
  confidence: Type.Integer({
    minimum: 0,
    maximum: 100,
    description:
      "The local reader's estimated chance in % that the reading is exact where its weights carry a calibration (models/noncommercial), else its readers' product (the default weights); a hosted reader's model's own estimate",
  }),
  escalated: Type.Boolean({ description: 'A later reader in the chain produced the result' }),
  model: Type.String(),
  reading_id: Type.Integer(),
  meter_id: Type.Union([Type.String(), Type.Null()], { description: "The client's meter_id; null when it sent none" }),
  plausibility: Type.Optional(ref(Plausibility)),
  needs_review: NeedsReview,
  whole_units_agreed: Type.Boolean({
    description:
      "The counter has fractional wheels and every reader of its window read these whole units (the local reader): unsure only of the litres, so it needs no review for being less confident than the account's threshold",
  }),
  counter_box: Type.Optional(ref(CounterBox)),
  digits: Type.Optional(
    Type.Array(ref(DigitConfidence), {
      description: 'One entry per wheel, left to right (decimal point excluded), when the reader gives them',
    }),
  ),
};
const ReadingResult = Type.Object(ReadingFields);
export type ReadingResult = Static<typeof ReadingResult>;

export const Failure = Type.Object(
  {
    code: Type.String({
      description: '`unreadable`, `invalid_image`, `readers_unavailable`, `expired` or `processing_failed`',
    }),
    message: Type.String(),
  },
  { $id: 'Failure', description: 'Why the submission failed' },
);

/** Present only on a replayed response. */
const replayedHeader = {
  'idempotent-replayed': Type.Literal('true', {
    description: 'Only on a retry with a known Idempotency-Key: this is the first request’s response',
  }),
};

export const AcceptedSubmission = Type.Object(
  { reference_id: ReferenceId, status: Type.Literal('pending') },
  {
    $id: 'StoredSubmission',
    description: 'A submission stored with its image and its read job; the result comes by webhook',
    examples: [{ reference_id: '7c0e4a4e-4b1f-4a52-9a3f-2d1f0e6c9b11', status: 'pending' }],
  },
);

/**
 * A reading's fields without the optional ones: the example every representation of a reading starts from, as the
 * default set (`models/`) reads.
 */
export const READING_EXAMPLE = {
  reading: '02390.276',
  value: 2390.276,
  confidence: 97,
  escalated: false,
  model: 'local-clean-ppocr-v7',
  reading_id: 42,
  meter_id: 'SN-4711',
  needs_review: false,
  whole_units_agreed: false,
};

/** READING_EXAMPLE as the local reader gives it, with where it saw the counter and each wheel's confidence. */
const LOCAL_READING_EXAMPLE = {
  ...READING_EXAMPLE,
  counter_box: {
    corners: [
      [412, 630],
      [1188, 622],
      [1190, 774],
      [414, 782],
    ],
    image_width: 1600,
    image_height: 1200,
  },
  digits: [0, 2, 3, 9, 0, 2, 7, 6].map((digit, wheel) => ({ digit, confidence: wheel < 5 ? 100 : 99 })),
};

export const CompletedReading = Type.Object(
  { reference_id: ReferenceId, status: Type.Literal('completed'), ...ReadingFields },
  {
    $id: 'CompletedReading',
    description: 'A photo read, as the sync submission answers it',
    examples: [{ reference_id: '7c0e4a4e-4b1f-4a52-9a3f-2d1f0e6c9b11', status: 'completed', ...LOCAL_READING_EXAMPLE }],
  },
);
export type CompletedReading = Static<typeof CompletedReading>;

export const Correction = Type.Object(
  {
    reading: Type.String({ description: 'The reading a person gave' }),
    value: Type.Number(),
    corrected_by: Type.String({ description: '`api key N`, or the dashboard user’s email' }),
    corrected_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Correction', description: 'The newest correction; the machine’s reading stays beside it' },
);
export type Correction = Static<typeof Correction>;

const submitted = { reference_id: ReferenceId, created_at: Type.String({ format: 'date-time' }) };

/** What a finished (completed or failed) submission has besides its outcome. */
const finished = {
  finished_at: Type.String({ format: 'date-time' }),
  correction: Type.Union([ref(Correction), Type.Null()], {
    description: 'The newest correction a person gave, or null',
  }),
};

const UnfinishedSubmission = Type.Object(
  {
    reference_id: submitted.reference_id,
    status: Type.Union([Type.Literal('pending'), Type.Literal('processing')]),
    created_at: submitted.created_at,
    finished_at: Type.Null(),
  },
  { $id: 'UnfinishedSubmission', description: 'Accepted, not read yet' },
);

const CompletedSubmission = Type.Object(
  {
    reference_id: submitted.reference_id,
    status: Type.Literal('completed'),
    created_at: submitted.created_at,
    finished_at: finished.finished_at,
    ...ReadingFields,
    correction: finished.correction,
  },
  {
    $id: 'CompletedSubmission',
    description: 'Read: the machine’s reading, and the newest correction a person gave beside it',
    examples: [
      {
        reference_id: '7c0e4a4e-4b1f-4a52-9a3f-2d1f0e6c9b11',
        status: 'completed',
        created_at: '2026-11-22T10:14:58.120Z',
        finished_at: '2026-11-22T10:15:00.000Z',
        ...LOCAL_READING_EXAMPLE,
        correction: null,
      },
    ],
  },
);

const FailedSubmission = Type.Object(
  {
    reference_id: submitted.reference_id,
    status: Type.Literal('failed'),
    created_at: submitted.created_at,
    finished_at: finished.finished_at,
    error: ref(Failure),
    correction: finished.correction,
    needs_review: NeedsReview,
  },
  {
    $id: 'FailedSubmission',
    description: 'Not read: `error` says why; a person may still give its reading as a correction',
  },
);

/**
 * A submission as GET, the list, a meter's history and the correction response show it, one shape per
 * `status`: a client that checks `status` gets the fields of that outcome, none of them optional.
 */
export const Submission = Type.Union([ref(UnfinishedSubmission), ref(CompletedSubmission), ref(FailedSubmission)], {
  $id: 'Submission',
  description:
    'A submission, by its `status`: `pending` or `processing`; `completed` with its reading; `failed` with its error',
  discriminator: {
    propertyName: 'status',
    mapping: {
      pending: componentPointer(UnfinishedSubmission),
      processing: componentPointer(UnfinishedSubmission),
      completed: componentPointer(CompletedSubmission),
      failed: componentPointer(FailedSubmission),
    },
  },
});
export type Submission = Static<typeof Submission>;

export const SubmissionPage = Type.Object(
  {
    data: Type.Array(ref(Submission), { description: 'Newest first' }),
    has_more: Type.Boolean({ description: 'More submissions match' }),
    next_cursor: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description: 'The reference_id of the last item, for `starting_after`; null on the last page',
    }),
  },
  { $id: 'SubmissionPage', description: 'A page of submissions' },
);

export const MeterReferenceParams = Type.Object({
  reference_id: Type.String({ description: 'The submission’s reference_id (a UUID)' }),
});

const MAX_LIST_LIMIT = 100;
export const MeterListQuery = Type.Object(
  {
    status: Type.Optional(SubmissionStatus),
    created_after: Type.Optional(
      Type.String({ format: 'date-time', description: 'Only submissions created after this instant (RFC 3339)' }),
    ),
    created_before: Type.Optional(
      Type.String({ format: 'date-time', description: 'Only submissions created before this instant (RFC 3339)' }),
    ),
    meter_id: Type.Optional(
      Type.String({
        pattern: METER_ID_PATTERN.source,
        description: 'Only submissions of this meter (the client’s meter_id)',
      }),
    ),
    plausibility: Type.Optional(
      Type.Union(PlausibilityStatus.anyOf, {
        description: 'Only completed submissions whose reading has this plausibility',
      }),
    ),
    needs_review: Type.Optional(
      Type.Boolean({ description: 'Only finished submissions whose `needs_review` is this' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIST_LIMIT, default: 20 })),
    starting_after: Type.Optional(
      Type.String({ format: 'uuid', description: 'A reference_id from the previous page (its `next_cursor`)' }),
    ),
    format: Type.Optional(
      Type.Union([Type.Literal('json'), Type.Literal('csv')], {
        description:
          '`csv`: the billing export, every matching submission (as `Accept: text/csv` asks); JSON pages otherwise',
      }),
    ),
  },
  { additionalProperties: false },
);

/** The billing export's columns, in order: its header row (src/meters/billing-export.ts writes the rows). */
export const EXPORT_COLUMNS = [
  'reference_id',
  'meter_id',
  'created_at',
  'finished_at',
  'status',
  'reading',
  'value',
  'unit',
  'confidence',
  'plausibility',
  'needs_review',
  'whole_units_agreed',
  'quality',
  'consumption',
  'corrected_reading',
  'corrected_by',
  'corrected_at',
  'escalated',
  'model',
] as const;
export type ExportColumn = (typeof EXPORT_COLUMNS)[number];

/** The billing export's body: a header row, then one row per submission (docs/api.md, "The billing export"). */
export const MeterReadingsCsv = Type.String({
  description: `RFC 4180 CSV, header row first: ${EXPORT_COLUMNS.join(', ')}`,
});

const ErrorEnvelope = Type.Object(
  {
    errors: Type.Record(Type.String(), Type.Array(Type.String(), { minItems: 1 }), {
      description: 'Each field that is wrong, with what is wrong with it',
    }),
    reference_id: Type.Optional(ReferenceId),
    status: Type.Optional(Type.Literal('failed')),
    request_id: Type.Optional(Type.String({ description: 'On a 500: the id to quote' })),
  },
  {
    $id: 'ErrorEnvelope',
    description:
      'Every error: `{"errors":{"<field>":["<message>"]}}`, sometimes with reference_id, status or request_id beside it',
    additionalProperties: true,
    examples: [{ errors: { image: ['Missing the field "image": attach the meter photo as a file'] } }],
  },
);

/** A response in the error envelope: what it means for this operation, and its headers. */
export function errorEnvelope(description: string, headers?: Record<string, TSchema>) {
  return ref(ErrorEnvelope, { description, ...(headers ? { headers } : {}) });
}

/** The error envelope in /openapi.json, for the refusals plugins/external/openapi.ts adds by hand. */
export const ERROR_ENVELOPE_POINTER = { $ref: componentPointer(ErrorEnvelope) };

export const INPUT_ERROR =
  'Invalid input; the field names the problem: `authorization` (bad or inactive key), `subscription`, `usage` (monthly limit), `image`, `idempotency`, or a query parameter';
export const SERVER_ERROR = 'Unexpected error; `request_id` says which request to quote';

const PHOTOS_UNAVAILABLE =
  '`photos`: the photo store (PHOTO_STORE) cannot be reached; an async submission was not stored';
const RETRY_AFTER = { 'retry-after': Type.String({ description: 'Seconds to wait before submitting again' }) };

/** The errors both POST endpoints can answer besides their own. */
const SubmissionErrors = {
  409: errorEnvelope('`idempotency`: a request with this Idempotency-Key is still running after 20 s; retry later'),
  415: errorEnvelope('`request`: a `Content-Encoding` other than `identity`: the photo is sent uncompressed'),
  422: errorEnvelope(INPUT_ERROR),
  500: errorEnvelope(SERVER_ERROR),
  503: errorEnvelope(PHOTOS_UNAVAILABLE, RETRY_AFTER),
};

/** The multipart form both POST endpoints read; documented only (the route streams it itself). */
const MeterPhotoUpload = Type.Object(
  {
    image: Type.String({
      format: 'binary',
      contentMediaType: 'application/octet-stream',
      description: 'The meter photo: JPEG, PNG, WebP, AVIF/HEIF, TIFF or GIF, at most 10 MB (10 485 760 bytes)',
    }),
    meter_id: Type.Optional(
      Type.String({
        pattern: METER_ID_PATTERN.source,
        description: 'Your identifier of the physical meter, to keep its readings together',
      }),
    ),
    previous_reading: Type.Optional(
      Type.String({
        pattern: READING_PATTERN.source,
        description: 'The meter’s last known reading, e.g. "02380.114": digits, optionally one decimal point',
      }),
    ),
    previous_read_at: Type.Optional(
      Type.String({
        pattern: INSTANT_PATTERN.source,
        description:
          'When the previous reading was taken: a date (2026-11-01), or a date-time with its offset (2026-11-01T08:00:00Z)',
      }),
    ),
  },
  { $id: 'PhotoUpload', description: 'The photo and what the client knows of its meter' },
);

const SubmissionHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      description:
        'Any 1–255 printable ASCII characters, unique per submission (e.g. a UUID). A retry with the same key within 24 h gets the first response back, with `Idempotent-Replayed: true`, and is neither stored nor counted. ' +
        'The same key with another request (image, endpoint, `meter_id`, `previous_reading` or `previous_read_at`) is a 422 `idempotency` naming what differs. ' +
        'Over the monthly limit, a key not used before is refused (`usage`) before the upload is read',
    }),
  ),
  expect: Type.Optional(
    Type.String({
      description:
        '`100-continue`: the server answers `100 Continue` once the key, subscription and usage checks have passed, and only then should the photo be sent; a refused request gets its final 422 instead, and the connection is closed',
    }),
  ),
});

const submission = {
  tags: ['Readings'],
  consumes: ['multipart/form-data'],
  headers: SubmissionHeaders,
  documentation: { body: ref(MeterPhotoUpload) },
};

/** Route schema of POST /api/meter-reading. */
export const AsyncSubmission = {
  ...submission,
  operationId: 'submitMeterReading',
  summary: 'Submit a photo; the result comes by webhook',
  response: {
    202: ref(AcceptedSubmission, {
      description: 'Accepted: the meter, its image and its read job are stored; the result comes by webhook',
      headers: {
        location: Type.String({ description: 'Where to GET the result: /api/meter-reading/{reference_id}' }),
        ...replayedHeader,
      },
    }),
    ...SubmissionErrors,
  },
};

/** Route schema of POST /api/meter-reading/sync. */
export const SyncSubmission = {
  ...submission,
  operationId: 'submitMeterReadingSync',
  summary: 'Submit a photo and wait for its reading',
  description: 'No webhook is sent for sync submissions.',
  response: {
    200: ref(CompletedReading, { description: 'Read', headers: replayedHeader }),
    ...SubmissionErrors,
    422: errorEnvelope(
      `${INPUT_ERROR}. Also \`image\` with \`reference_id\` and \`status: failed\` when the readers found no reading`,
    ),
    503: errorEnvelope(
      `\`reader\`: no reader could be reached; the meter is failed (\`reference_id\`, \`status\`). Or ${PHOTOS_UNAVAILABLE}`,
      RETRY_AFTER,
    ),
  },
};

named(
  CounterBox,
  DigitConfidence,
  Plausibility,
  Failure,
  AcceptedSubmission,
  CompletedReading,
  Correction,
  UnfinishedSubmission,
  CompletedSubmission,
  FailedSubmission,
  Submission,
  SubmissionPage,
  ErrorEnvelope,
  MeterPhotoUpload,
);
