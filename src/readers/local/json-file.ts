import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The JSON in `text`, read from `file` beside a set of weights; text that is not JSON names the file. */
export function parseJsonFile(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not JSON: ${(error as Error).message}`);
  }
}

/** The file `name` beside the weights in `modelDir`, read by `parse`; none when the set has no such file. */
export function readSetFile<T>(
  modelDir: string,
  name: string,
  parse: (text: string, file: string) => T,
): T | undefined {
  const file = path.join(modelDir, name);
  return existsSync(file) ? parse(readFileSync(file, 'utf8'), file) : undefined;
}
