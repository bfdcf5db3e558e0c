import { ALPHABET } from './spec.ts';

export interface DecodedStrip {
  /** Characters as read, e.g. `00758.407`. */
  text: string;
  /** One probability (0–1) per digit of `text`, the decimal point excluded. */
  digitProbabilities: number[];
  /** Probability the model gave the decimal point, when it read one. */
  pointProbability?: number;
}

/**
 * Best-path CTC decoding of per-step class probabilities (`steps` x `classes`, blank at index 0):
 * repeated classes collapse, blanks separate them. A character's probability is its peak over its run.
 */
export function decodeCtc(probabilities: Float32Array, steps: number, classes: number): DecodedStrip {
  let text = '';
  const digitProbabilities: number[] = [];
  let pointProbability: number | undefined;
  let previous = 0;
  let runPeak = 0;
  const closeRun = () => {
    if (previous === 0) return;
    const character = ALPHABET[previous - 1]!;
    text += character;
    if (character === '.') pointProbability = Math.min(pointProbability ?? 1, runPeak);
    else digitProbabilities.push(runPeak);
  };
  for (let step = 0; step < steps; step++) {
    const row = probabilities.subarray(step * classes, (step + 1) * classes);
    let best = 0;
    for (let index = 1; index < classes; index++) if (row[index]! > row[best]!) best = index;
    if (best === previous) {
      runPeak = Math.max(runPeak, row[best]!);
      continue;
    }
    closeRun();
    previous = best;
    runPeak = row[best]!;
  }
  closeRun();
  return { text, digitProbabilities, pointProbability };
}

/** Wheel layouts the model was trained on: 5 whole-unit wheels, optionally 3 fractional (red) wheels. */
const KNOWN_LAYOUT = /^\d{5}(\.\d{3})?$/;
/** Anything else that still reads as a number: shown, but never trusted above this confidence. */
const UNUSUAL_LAYOUT_CONFIDENCE_CAP = 40;
const READING = /^\d+(\.\d+)?$/;

export interface FormattedReading {
  reading: string;
  value: number;
  /** 0–100, not rounded. */
  confidence: number;
  digitConfidences: number[];
}

/**
 * Turns a decoded strip into the reading as the dial shows it (leading zeros and the decimal point kept)
 * with its confidence: the weakest digit's probability, times how sure the model is of the orientation,
 * capped for layouts it never saw in training. Undefined when the text is not a number (e.g. `..`, ``).
 */
export function formatReading(strip: DecodedStrip, orientationProbability: number): FormattedReading | undefined {
  if (!READING.test(strip.text)) return undefined;
  const weakest = Math.min(...strip.digitProbabilities, strip.pointProbability ?? 1);
  let confidence = 100 * weakest * orientationProbability;
  if (!KNOWN_LAYOUT.test(strip.text)) confidence = Math.min(confidence, UNUSUAL_LAYOUT_CONFIDENCE_CAP);
  return {
    reading: strip.text,
    value: Number(strip.text),
    confidence,
    digitConfidences: strip.digitProbabilities.map((p) => Math.round(100 * p)),
  };
}
