/**
 * Why a request is not carried out, as each surface tells it once: the API's status
 * (plugins/app/error-envelope.ts), the dashboard page's (routes/dashboard/index.ts), the CLI's
 * exit code (cli/output.ts).
 */
export type ErrorKind = 'invalid' | 'not_found' | 'conflict' | 'refused' | 'unavailable';

/**
 * The one error the service throws for a request it will not carry out. `field` names what was
 * wrong (a request field, or a topic such as `authorization` or `usage`): it is the key of the
 * API's envelope `{"errors":{"<field>":["<message>"]}}`, sometimes with more top-level members
 * (`extra`: reference_id, status). `status` overrides the kind's HTTP status where the API
 * documents another one (401, 403, 429).
 */
export class DomainError extends Error {
  readonly kind: ErrorKind;
  readonly field: string;
  readonly status: number | undefined;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    kind: ErrorKind,
    field: string,
    message: string,
    options: {
      status?: number;
      extra?: Record<string, unknown>;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'DomainError';
    this.kind = kind;
    this.field = field;
    this.status = options.status;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }

  get body(): Record<string, unknown> {
    return errorBody(this.field, this.message, this.extra);
  }
}

export function isDomainError(error: unknown, kind: ErrorKind): error is DomainError {
  return error instanceof DomainError && error.kind === kind;
}

export function errorBody(
  field: string,
  message: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { errors: { [field]: [message] }, ...extra };
}

/** The most characters of a client's words (a field's name, a header) that an answer quotes. */
const QUOTED_CHARACTERS = 40;

/** A client's words for a message or an envelope's field: cut after QUOTED_CHARACTERS (by code point), then `…`. */
export function cut(words: string): string {
  const characters = [...words];
  return characters.length > QUOTED_CHARACTERS ? `${characters.slice(0, QUOTED_CHARACTERS).join('')}…` : words;
}

/** A client's words in quotes, for a message, cut. */
export function quoted(words: string): string {
  return `"${cut(words)}"`;
}

const ID_PATTERN = /^[1-9][0-9]{0,17}$/;

/**
 * Ids are bigint identities; checking them here turns a Postgres syntax error into a clear message.
 * An id taken from a URL passes `notAnId`: there, something that is no id names nothing (404).
 */
export function requireId(value: string | number, field: string, notAnId?: () => DomainError): string {
  const id = String(value);
  if (ID_PATTERN.test(id)) return id;
  throw notAnId?.() ?? new DomainError('invalid', field, `${field} must be a positive integer id, got "${id}"`);
}

export function requireText(value: string, field: string): string {
  const text = value.trim();
  if (!text) throw new DomainError('invalid', field, `${field} must not be empty`);
  return text;
}
