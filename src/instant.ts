import { DomainError } from './errors.ts';

/**
 * An instant as the API takes it: an ISO 8601 date (midnight UTC), or a date-time with its offset
 * (a time without one would be read in the server's zone); seconds and their fraction optional.
 */
export const INSTANT_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2}))?$/;

/**
 * The instant a request field names, or a 422 naming the field: `formMessage` when it is not of the
 * form, else what is wrong. JavaScript's Date shifts what is out of range (2026-02-30 becomes
 * 2 March, year 0000 is 1 BC) and cannot hold a leap second, so every part is checked against the
 * calendar and the clock first. A leap second (`:60`) is refused: neither JavaScript nor
 * PostgreSQL has one, and `:59` says nearly the same.
 */
export function instantField(text: string, field: string, formMessage: string): Date {
  const match = INSTANT_PATTERN.exec(text);
  if (!match) throw new DomainError('invalid', field, formMessage);
  const problem = rangeProblem(match);
  if (problem) throw new DomainError('invalid', field, `${field} ${problem}`);
  const [, year, month, day, hour = '00', minute = '00', second = '00', fraction = '', offset = 'Z'] = match;
  // Every part is in range, so this form (which Date reads alike for every year 0001–9999) is exact.
  return new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}${fraction.slice(0, 4)}${offset.toUpperCase()}`);
}

function rangeProblem([, year, month, day, hour = '00', minute = '00', second = '00', , offset = 'Z']: RegExpExecArray):
  | string
  | undefined {
  if (year === '0000') return 'has year 0000: years start at 0001';
  if (
    Number(month) < 1 ||
    Number(month) > 12 ||
    Number(day) < 1 ||
    Number(day) > daysInMonth(Number(year), Number(month))
  ) {
    return `names no day of the calendar: ${year}-${month}-${day}`;
  }
  if (second === '60') return 'is a leap second (:60), which is not taken: use :59';
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59)
    return `names no time of day: ${hour}:${minute}:${second}`;
  if (/^[+-]/.test(offset) && (Number(offset.slice(1, 3)) > 23 || Number(offset.slice(4)) > 59))
    return `has an offset no zone has: ${offset}`;
  return undefined;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
