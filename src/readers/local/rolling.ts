import { isByLayout, layoutOf } from './confidence.ts';
import { inLayout, type LayoutReading } from './decode.ts';
import { parseJsonFile, readSetFile } from './json-file.ts';

/**
 * How a set's readers' last wheel is read when it is caught between two digits (ROLLING_FILE beside the weights):
 * the last wheel turns all the time, and readers taught one rule for it (the clean set's renders show the lower digit
 * until the next is 0.7 of the way in, ml/synth.py) are measured against readings that follow another (the digit
 * mostly in view). Per layout (`ddddd`), the share of the probability of the digit the readers favour that the next
 * digit needs for the wheel to read it. A layout it does not name reads the digit the readers favour.
 */
export interface Rolling {
  nextDigitAt: Record<string, number>;
  /** What it was chosen on, for the people who read the file. */
  chosenOn: string;
}

export const ROLLING_FILE = 'rolling.json';

/** The rolling rule beside the weights in `modelDir`, checked; none when the file is not there. */
export function loadRolling(modelDir: string): Rolling | undefined {
  return readSetFile(modelDir, ROLLING_FILE, parseRolling);
}

/** The rolling rule in `file`; a file that is not one stops the model from loading. */
export function parseRolling(text: string, file: string): Rolling {
  const parsed = parseJsonFile(text, file) as Partial<Rolling> | null;
  const { nextDigitAt, chosenOn } = parsed ?? {};
  if (!isByLayout(nextDigitAt, isShare) || typeof chosenOn !== 'string') {
    throw new Error(
      `${file} is not a rolling rule: it needs "nextDigitAt", a number above 0 and at most 1 for each layout such as ` +
        '"ddddd", and a "chosenOn" text',
    );
  }
  return { nextDigitAt, chosenOn };
}

function isShare(value: number): boolean {
  return value > 0 && value <= 1;
}

/**
 * The strip with its last wheel read by `rolling`: the digit after the one read is weighed up by 1 / the layout's
 * share, so it is read where the readers give it at least that share of what they give the digit read, and the
 * wheel's probabilities are the weighed ones, their sum kept (the rest is the readers' on the blank and the point): a
 * next digit the readers give anything takes from the digit read. A wheel on 9 keeps it: rolling on would carry into
 * wheels the readers read on their own.
 */
export function readLastWheel(strip: LayoutReading, rolling: Rolling | undefined): LayoutReading {
  const share = rolling?.nextDigitAt[layoutOf(strip.text)];
  const last = strip.digitDistributions.at(-1);
  const digits = [...strip.text.replaceAll('.', '')];
  const read = Number(digits.at(-1));
  if (share === undefined || last === undefined || read === 9 || !(last[read + 1]! > 0)) return strip;
  const weighed = last.map((p, digit) => (digit === read + 1 ? p / share : p));
  const scale = sum(last) / sum(weighed);
  const distribution = weighed.map((p) => p * scale);
  const digit = last[read + 1]! >= share * last[read]! ? read + 1 : read;
  digits[digits.length - 1] = String(digit);
  return {
    ...strip,
    text: inLayout(strip.text, digits),
    digitProbabilities: [...strip.digitProbabilities.slice(0, -1), distribution[digit]!],
    digitDistributions: [...strip.digitDistributions.slice(0, -1), distribution],
  };
}

/** The reading the readers gave before `readLastWheel` rolled its last wheel on: one unit of that wheel lower. */
export function unrolled(reading: string): string {
  const last = Number(reading.at(-1));
  return reading.slice(0, -1) + String(last - 1);
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
