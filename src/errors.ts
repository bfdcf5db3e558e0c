/**
 * Every error a client sees has the same envelope: `{"errors":{"<field>":["<message>"]}}`,
 * sometimes with more top-level members (reference_id, status, request_id).
 */
export class ApiError extends Error {
  readonly statusCode: number;
  readonly field: string;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    statusCode: number,
    field: string,
    message: string,
    options: { extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.statusCode = statusCode;
    this.field = field;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }

  get body(): Record<string, unknown> {
    return errorBody(this.field, this.message, this.extra);
  }
}

export function errorBody(field: string, message: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { errors: { [field]: [message] }, ...extra };
}
