import { Type, type Static } from '@sinclair/typebox';

export const AcceptedMeterResponse = Type.Object({
  reference_id: Type.String({ format: 'uuid' }),
  status: Type.Literal('pending'),
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
});
export type CompletedReadingResponse = Static<typeof CompletedReadingResponse>;
