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
  return lines.map((cells) => widths.map((width, column) => (cells[column] ?? '').padEnd(width)).join('  ').trimEnd());
}

/** bigint ids travel as strings inside the service; JSON output shows them as the numbers they are. */
export function jsonId(id: string): number {
  return Number(id);
}
