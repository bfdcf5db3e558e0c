import t from 'tap';
import { DomainError } from '../src/errors.ts';
import { instantField } from '../src/instant.ts';

const FORM = 'when must be a date or a date-time with its offset';

function problem(text: string): string | undefined {
  try {
    instantField(text, 'when', FORM);
    return undefined;
  } catch (error) {
    return error instanceof DomainError && error.kind === 'invalid' && error.field === 'when'
      ? error.message
      : String(error);
  }
}

t.test('a real date or date-time with its offset is the instant it names', async (t) => {
  const cases: Array<[string, string]> = [
    ['2026-11-01', '2026-11-01T00:00:00.000Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    ['2000-02-29T12:00:00Z', '2000-02-29T12:00:00.000Z'],
    ['2026-11-01T08:00Z', '2026-11-01T08:00:00.000Z'],
    ['2026-11-01t08:00:00.1234567z', '2026-11-01T08:00:00.123Z'],
    ['2026-11-01 08:00:00+02:00', '2026-11-01T06:00:00.000Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59-23:59', '+010000-01-01T23:58:59.000Z'],
  ];
  for (const [text, iso] of cases) t.equal(instantField(text, 'when', FORM).toISOString(), iso, text);
});

t.test('what Date would shift or cannot hold is refused, saying why', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['2026-02-30', /^when names no day of the calendar: 2026-02-30$/],
    ['2026-02-29', /no day of the calendar/],
    ['1900-02-29', /no day of the calendar/],
    ['2026-13-01', /no day of the calendar/],
    ['2026-04-31T00:00:00Z', /no day of the calendar/],
    ['2026-01-00', /no day of the calendar/],
    ['0000-01-01', /^when has year 0000: years start at 0001$/],
    ['2016-12-31T23:59:60Z', /^when is a leap second \(:60\), which is not taken: use :59$/],
    ['2026-01-01T24:00:00Z', /^when names no time of day: 24:00:00$/],
    ['2026-01-01T12:60Z', /no time of day/],
    ['2026-01-01T00:00:00+24:00', /^when has an offset no zone has: \+24:00$/],
    ['2026-01-01T00:00:00+01', new RegExp(`^${FORM}$`)],
    ['2026-01-01T00:00:00+0100', new RegExp(`^${FORM}$`)],
    ['2026-01-01T00:00:00', new RegExp(`^${FORM}$`)],
    ['+012026-01-01', new RegExp(`^${FORM}$`)],
    ['yesterday', new RegExp(`^${FORM}$`)],
  ];
  for (const [text, message] of cases) t.match(problem(text), message, text);
});
