import { DomainError } from '../errors.ts';
import { instantField } from '../instant.ts';
import { FRACTIONAL_WHEELS_LIMIT, WHOLE_WHEELS_LIMIT } from '../meters/meter-points.ts';
import { parseReading } from '../readers/reader.ts';
import type { UploadFields } from './validate-image.ts';

export const METER_ID_PATTERN = /^[A-Za-z0-9._:/-]{1,64}$/;
export const METER_ID_RULE = 'meter_id must be 1–64 characters of A–Z, a–z, 0–9 and . _ : / -';
/** Clocks differ: a previous reading "from the future" by up to this much is let through. */
const CLOCK_SKEW_MS = 5 * 60_000;

/** The physical meter a photo is of, and what the client trusts about it; every part optional. */
export interface MeterIdentity {
  meterId?: string;
  previousReading?: { reading: string; readAt?: Date };
}

/** Step 4b: the optional text fields `meter_id`, `previous_reading` and `previous_read_at`, checked. */
export function identifyMeter(fields: UploadFields): MeterIdentity {
  const identity: MeterIdentity = {};
  if (fields.meter_id !== undefined) identity.meterId = meterIdField(fields.meter_id);
  if (fields.previous_reading !== undefined) {
    identity.previousReading = { reading: readingField(fields.previous_reading, 'previous_reading') };
    if (fields.previous_read_at !== undefined)
      identity.previousReading.readAt = readAtField(fields.previous_read_at, 'previous_read_at');
  } else if (fields.previous_read_at !== undefined) {
    throw new DomainError(
      'invalid',
      'previous_read_at',
      'previous_read_at needs previous_reading: send the reading it was taken at',
    );
  }
  return identity;
}

export function meterIdField(value: string): string {
  if (!METER_ID_PATTERN.test(value)) {
    throw new DomainError('invalid', 'meter_id', METER_ID_RULE);
  }
  return value;
}

/**
 * A reading a person or client gives: digits with an optional decimal point, e.g. "00606.494" or 606.494, with no
 * more wheels than a layout may have (more is not a meter's reading, and past 15 digits not even a number's).
 */
export function readingField(value: unknown, field: string): string {
  const text = typeof value === 'number' && Number.isFinite(value) && value >= 0 ? String(value) : value;
  const parsed = typeof text === 'string' ? parseReading(text) : undefined;
  const [whole = '', fraction = ''] = parsed?.reading.split('.') ?? [];
  if (!parsed || whole.length > WHOLE_WHEELS_LIMIT || fraction.length > FRACTIONAL_WHEELS_LIMIT)
    throw new DomainError(
      'invalid',
      field,
      `${field} must be a meter reading such as "00606.494": digits, optionally one decimal point, at most ` +
        `${WHOLE_WHEELS_LIMIT} before it and ${FRACTIONAL_WHEELS_LIMIT} after`,
    );
  return parsed.reading;
}

/** When a reading was taken: a real date, or date-time with its offset; not in the future. */
export function readAtField(value: unknown, field: string): Date {
  const readAt = instantField(
    typeof value === 'string' ? value.trim() : '',
    field,
    `${field} must be an ISO 8601 date, or date-time with its offset, such as 2026-11-01T08:00:00Z`,
  );
  if (readAt.getTime() > Date.now() + CLOCK_SKEW_MS)
    throw new DomainError('invalid', field, `${field} is in the future`);
  return readAt;
}
