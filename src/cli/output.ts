import { DomainError, type ErrorKind } from '../errors.ts';

const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Bad input exits with 2, as bad arguments do; things that do not exist, refusals and failures with 1. */
const EXIT_CODES: Record<ErrorKind, number> = {
  invalid: EXIT_USAGE,
  not_found: EXIT_FAILURE,
  conflict: EXIT_FAILURE,
  refused: EXIT_FAILURE,
  unavailable: EXIT_FAILURE,
};

export function exitCodeOf(error: unknown): number {
  return error instanceof DomainError ? EXIT_CODES[error.kind] : EXIT_FAILURE;
}

/**
 * Every command reports through here, so `--json` means the same everywhere: one JSON object
 * per result on its own line (and nothing else on stdout), otherwise short lines for a person.
 */
export class Output {
  readonly json: boolean;
  readonly #write: (text: string) => void;

  constructor(json: boolean, write: (text: string) => void = (text) => process.stdout.write(text)) {
    this.json = json;
    this.#write = write;
  }

  print(result: object, human: string | string[]): void {
    const text = this.json ? JSON.stringify(result) : [human].flat().join('\n');
    this.#write(`${text}\n`);
  }
}

/** Columns padded to their widest cell; a header line, then one line per row. */
export function table(headers: string[], rows: string[][]): string[] {
  const lines = [headers, ...rows];
  const widths = headers.map((_, column) => Math.max(...lines.map((cells) => cells[column]?.length ?? 0)));
  return lines.map((cells) =>
    widths
      .map((width, column) => (cells[column] ?? '').padEnd(width))
      .join('  ')
      .trimEnd(),
  );
}

/** bigint ids travel as strings inside the service; JSON output shows them as the numbers they are. */
export function jsonId(id: string): number {
  return Number(id);
}
