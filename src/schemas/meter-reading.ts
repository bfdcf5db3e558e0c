import { Type, type Static } from '@sinclair/typebox';

export const AcceptedMeterResponse = Type.Object({
  reference_id: Type.String({ format: 'uuid' }),
  status: Type.Literal('pending'),
});

export const PlausibilityResponse = Type.Object({
  status: Type.Union(['ok', 'corrected', 'implausible', 'unknown'].map((status) => Type.Literal(status))),
  reference: Type.Union([Type.String(), Type.Null()], { description: 'The reading the window was built around' }),
  reference_source: Type.Union([Type.Literal('previous_reading'), Type.Literal('reading'), Type.Literal('correction'), Type.Null()]),
  window: Type.Union([Type.Object({ min: Type.Number(), max: Type.Number() }), Type.Null()]),
  unconstrained_reading: Type.Optional(Type.String({ description: 'The free decode, when the window changed it' })),
  reason: Type.Optional(Type.String({ description: 'Why the reading is implausible' })),
});

export const CompletedReadingResponse = Type.Object({
  reference_id: Type.String({ format: 'uuid' }),
  status: Type.Literal('completed'),
  reading: Type.String({ description: 'Digits as the dial shows them, e.g. "02390.276"' }),
  value: Type.Number(),
  confidence: Type.Integer({ minimum: 0, maximum: 100 }),
  escalated: Type.Boolean(),
  model: Type.String(),
  reading_id: Type.Integer(),
  meter_id: Type.Union([Type.String(), Type.Null()], { description: 'The client\'s meter_id, if it sent one' }),
  plausibility: PlausibilityResponse,
});
export type CompletedReadingResponse = Static<typeof CompletedReadingResponse>;
