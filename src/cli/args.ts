import { DomainError } from '../errors.ts';

/** Wrong or missing command-line arguments: the CLI prints the message and the usage, and exits with 2. */
export class UsageError extends DomainError {
  constructor(message: string) {
    super('invalid', 'arguments', message);
    this.name = 'UsageError';
  }
}

export interface CommandArgs {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

export function requiredOption(args: CommandArgs, name: string): string {
  const value = optionalOption(args, name);
  if (value === undefined) throw new UsageError(`--${name} is required`);
  return value;
}

export function optionalOption(args: CommandArgs, name: string): string | undefined {
  const value = args.values[name];
  if (typeof value !== 'string') return undefined;
  if (!value.trim()) throw new UsageError(`--${name} must not be empty`);
  return value;
}

export function integerOption(args: CommandArgs, name: string, minimum: number): number {
  return integer(requiredOption(args, name), `--${name}`, minimum);
}

export function dateOption(args: CommandArgs, name: string): Date {
  const value = requiredOption(args, name);
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) {
    throw new UsageError(`--${name} must be a date such as 2026-12-31 or 2026-12-31T12:00:00Z, got "${value}"`);
  }
  return date;
}

export function singlePositional(args: CommandArgs, what: string): string {
  const [positional, ...rest] = args.positionals;
  if (positional === undefined || rest.length > 0) throw new UsageError(`expected exactly one ${what}`);
  return positional;
}

function integer(value: string, what: string, minimum: number): number {
  const number = /^-?\d+$/.test(value.trim()) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < minimum) {
    throw new UsageError(`${what} must be an integer of at least ${minimum}, got "${value}"`);
  }
  return number;
}
