/** The thing asked for does not exist (or is not visible to the account that asked). */
export class NotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}

/** The caller passed a value the operation cannot accept; the message says which and why. */
export class InvalidInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidInputError';
  }
}

const ID_PATTERN = /^[1-9][0-9]{0,17}$/;

/** Ids are bigint identities; checking them here turns a Postgres syntax error into a clear message. */
export function requireId(value: string | number, what: string): string {
  const id = String(value);
  if (!ID_PATTERN.test(id)) throw new InvalidInputError(`${what} must be a positive integer id, got "${id}"`);
  return id;
}

export function requireText(value: string, what: string): string {
  const text = value.trim();
  if (!text) throw new InvalidInputError(`${what} must not be empty`);
  return text;
}
