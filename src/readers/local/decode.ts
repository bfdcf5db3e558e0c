import { ALPHABET, LAYOUTS, WHEEL_READER_WEIGHT } from './spec.ts';
import { layoutOf } from './confidence.ts';

export interface DecodedStrip {
  /** Characters as read, e.g. `00758.407`. */
  text: string;
  /** One probability (0–1) per digit of `text`, the decimal point excluded. */
  digitProbabilities: number[];
  /** Per digit of `text`, the probabilities of 0–9 where the digit is read surest (its own is its probability). */
  digitDistributions: number[][];
  /** Probability the model gave the decimal point, when it read one. */
  pointProbability?: number;
  /**
   * Per digit of `text`, the step where it is read surest: where along the strip the model saw it. One reader's only.
   */
  digitSteps?: number[];
}

export interface LayoutReading extends DecodedStrip {
  /**
   * How much forcing the text into the layout cost: the probability of the best path in the layout over the
   * probability of the best path of all (1 when the model's own reading already has the layout).
   */
  layoutFit: number;
}

const BLANK = 0;
const POINT = ALPHABET.indexOf('.') + 1;
const DIGITS = [...'0123456789'].map((digit) => ALPHABET.indexOf(digit) + 1);

/**
 * Best-path CTC decoding of per-step class probabilities (`steps` x `classes`, blank at index 0):
 * repeated classes collapse, blanks separate them. A character's probability is its peak over its run.
 */
export function decodeCtc(
  probabilities: Float32Array,
  steps: number,
  classes: number,
): DecodedStrip & { logProbability: number } {
  const path: number[] = [];
  let logProbability = 0;
  for (let step = 0; step < steps; step++) {
    let best = 0;
    for (let index = 1; index < classes; index++)
      if (probabilities[step * classes + index]! > probabilities[step * classes + best]!) best = index;
    path.push(best);
    logProbability += Math.log(probabilities[step * classes + best]!);
  }
  return { ...collapse(path, probabilities, classes), logProbability };
}

/**
 * The most probable CTC path whose text fits `layout` (Viterbi over the layout's slots: each slot is one run of
 * a character, blanks may come between and around runs and must separate equal neighbours).
 */
export function decodeInLayout(
  probabilities: Float32Array,
  steps: number,
  classes: number,
  layout: string,
): DecodedStrip & { logProbability: number } {
  const slots = [...layout].map((kind) => (kind === '.' ? [POINT] : DIGITS));
  const slotCount = slots.length;
  // State ids: `j` = blank after j slots (0..slotCount); slotCount + 1 + k * classes + c = slot k showing class c.
  const stateCount = slotCount + 1 + slotCount * classes;
  const charState = (slot: number, symbol: number) => slotCount + 1 + slot * classes + symbol;
  let score = new Float64Array(stateCount).fill(-Infinity);
  let next = new Float64Array(stateCount);
  const back = new Int32Array(steps * stateCount).fill(-1);
  const logAt = (step: number, symbol: number) => Math.log(Math.max(probabilities[step * classes + symbol]!, 1e-30));

  score[0] = logAt(0, BLANK);
  for (const symbol of slots[0]!) score[charState(0, symbol)] = logAt(0, symbol);
  for (let step = 1; step < steps; step++) {
    next.fill(-Infinity);
    const offset = step * stateCount;
    for (let blank = 0; blank <= slotCount; blank++) {
      let best = score[blank]!,
        from = blank;
      if (blank > 0) {
        for (const symbol of slots[blank - 1]!) {
          if (score[charState(blank - 1, symbol)]! > best) {
            best = score[charState(blank - 1, symbol)]!;
            from = charState(blank - 1, symbol);
          }
        }
      }
      next[blank] = best + logAt(step, BLANK);
      back[offset + blank] = from;
    }
    for (let slot = 0; slot < slotCount; slot++) {
      for (const symbol of slots[slot]!) {
        const state = charState(slot, symbol);
        let best = score[state]!,
          from = state;
        if (score[slot]! > best) {
          best = score[slot]!;
          from = slot;
        }
        if (slot > 0) {
          for (const previous of slots[slot - 1]!) {
            if (previous !== symbol && score[charState(slot - 1, previous)]! > best) {
              best = score[charState(slot - 1, previous)]!;
              from = charState(slot - 1, previous);
            }
          }
        }
        next[state] = best + logAt(step, symbol);
        back[offset + state] = from;
      }
    }
    [score, next] = [next, score];
  }

  let end = slotCount;
  for (const symbol of slots[slotCount - 1]!)
    if (score[charState(slotCount - 1, symbol)]! > score[end]!) end = charState(slotCount - 1, symbol);
  const logProbability = score[end]!;
  const path = new Array<number>(steps);
  for (let step = steps - 1, state = end; step >= 0; step--) {
    path[step] = state <= slotCount ? BLANK : (state - slotCount - 1) % classes;
    state = back[step * stateCount + state]!;
  }
  return { ...collapse(path, probabilities, classes), logProbability };
}

/** The model's reading in whichever of `layouts` (by default every trained one) it finds most probable. */
export function readInLayouts(
  probabilities: Float32Array,
  steps: number,
  classes: number,
  layouts: string[] = LAYOUTS,
): LayoutReading {
  const free = decodeCtc(probabilities, steps, classes);
  const candidates = layouts.map((layout) => decodeInLayout(probabilities, steps, classes, layout));
  const best = candidates.reduce((a, b) => (b.logProbability > a.logProbability ? b : a));
  const { logProbability, ...strip } = best;
  return { ...strip, layoutFit: Math.min(1, Math.exp(logProbability - free.logProbability)) };
}

/** The layout (`ddddd.ddd`) most of the readings are in, the first read on a tie, and those readings. */
export function mostChosenLayout(readings: LayoutReading[]): [string, LayoutReading[]] {
  const byLayout = new Map<string, LayoutReading[]>();
  for (const reading of readings) {
    const layout = layoutOf(reading.text);
    byLayout.set(layout, [...(byLayout.get(layout) ?? []), reading]);
  }
  return [...byLayout].reduce((a, b) => (b[1].length > a[1].length ? b : a));
}

/**
 * Several readers' readings of one strip as one, wheel by wheel. The layout most readers chose wins. Each wheel
 * shows the digit with the most probability behind it, summed over the readers that read that layout (all the
 * probability each gave every digit there, not only to the digit it read); its probability is that sum over all
 * readers, so a reader that disagrees (on the digit or the layout) lowers it. Readers trained apart overfit
 * apart: where they agree the wheel is surer, where they split the reading says so.
 * `wheelVotes` (the wheel reader's probabilities of 0–9 for each wheel) vote on the digits, not on the point,
 * when the layout has as many wheels: as WHEEL_READER_WEIGHT strip readers would, on whole-unit and on fractional
 * wheels.
 */
export function combineReadings(readings: LayoutReading[], wheelVotes: number[][] = []): LayoutReading {
  const [shape, agreeing] = mostChosenLayout(readings);
  const wheelCount = shape.replaceAll('.', '').length;
  const wheelReaderVotes = wheelVotes.length === wheelCount;
  const wholeWheels = shape.split('.')[0]!.length;

  const digitDistributions = Array.from({ length: wheelCount }, (_, wheel) => {
    const wheelReaderWeight = !wheelReaderVotes
      ? 0
      : wheel < wholeWheels
        ? WHEEL_READER_WEIGHT.wholeUnits
        : WHEEL_READER_WEIGHT.fractional;
    return DIGITS.map(
      (_, digit) =>
        (agreeing.reduce((sum, reading) => sum + reading.digitDistributions[wheel]![digit]!, 0) +
          wheelReaderWeight * (wheelVotes[wheel]?.[digit] ?? 0)) /
        (readings.length + wheelReaderWeight),
    );
  });
  const digits = digitDistributions.map(mostProbableDigit);
  const points = agreeing.map((reading) => reading.pointProbability ?? 0);
  return {
    text: inLayout(shape, digits),
    digitProbabilities: digitDistributions.map((distribution, i) => distribution[digits[i]!]!),
    digitDistributions,
    pointProbability: shape.includes('.') ? points.reduce((sum, p) => sum + p, 0) / readings.length : undefined,
    layoutFit: agreeing.reduce((sum, reading) => sum + reading.layoutFit, 0) / agreeing.length,
  };
}

/** The wheels' digits, in order, with the decimal point where `layout` (a reading, or `ddddd.ddd`) has it. */
export function inLayout(layout: string, digits: ArrayLike<number | string>): string {
  let wheel = 0;
  return [...layout].map((kind) => (kind === '.' ? '.' : String(digits[wheel++]))).join('');
}

/** The digit a wheel's probabilities of 0–9 favour. */
export function mostProbableDigit(distribution: number[]): number {
  return distribution.indexOf(Math.max(...distribution));
}

function collapse(path: number[], probabilities: Float32Array, classes: number): DecodedStrip {
  const runs: Array<{ symbol: number; peak: number; peakStep: number }> = [];
  path.forEach((symbol, step) => {
    if (symbol === BLANK) return;
    const probability = probabilities[step * classes + symbol]!;
    const run = runs.at(-1);
    if (run && path[step - 1] === symbol) {
      if (probability > run.peak) {
        run.peak = probability;
        run.peakStep = step;
      }
    } else {
      runs.push({ symbol, peak: probability, peakStep: step });
    }
  });
  const points = runs.filter((run) => run.symbol === POINT).map((run) => run.peak);
  const digitRuns = runs.filter((run) => run.symbol !== POINT);
  return {
    text: runs.map((run) => ALPHABET[run.symbol - 1]).join(''),
    digitProbabilities: digitRuns.map((run) => run.peak),
    digitDistributions: digitRuns.map((run) => DIGITS.map((symbol) => probabilities[run.peakStep * classes + symbol]!)),
    digitSteps: digitRuns.map((run) => run.peakStep),
    pointProbability: points.length ? Math.min(...points) : undefined,
  };
}

export interface FormattedReading {
  reading: string;
  value: number;
  /** 0–100, not rounded. */
  confidence: number;
  digitConfidences: number[];
}

const READING = /^\d+(\.\d+)?$/;

/**
 * The reading as the dial shows it (leading zeros and the decimal point kept) with its confidence: the chance
 * that every digit (and the point) is right, taking them as independent, times how sure the model is of the
 * orientation and of the layout. Undefined when the text is not a number.
 */
export function formatReading(
  strip: Omit<LayoutReading, 'digitDistributions'>,
  orientationProbability: number,
): FormattedReading | undefined {
  if (!READING.test(strip.text)) return undefined;
  const allRight = [...strip.digitProbabilities, strip.pointProbability ?? 1].reduce((product, p) => product * p, 1);
  return {
    reading: strip.text,
    value: Number(strip.text),
    confidence: 100 * allRight * orientationProbability * strip.layoutFit,
    digitConfidences: strip.digitProbabilities.map((p) => Math.round(100 * p)),
  };
}

/** Readings in units of the last wheel, both ends included. */
export interface WheelRange {
  low: number;
  high: number;
}

/**
 * The most probable digits for the wheels (each wheel's probabilities of 0–9) whose number, in units of the last
 * wheel, lies in `range`: a dynamic programme over the wheels, left to right. Its states say whether the digits so
 * far still equal the range's low end and its high end (the next digit is then bounded by that end's digit), and
 * whether a carry is running: a wheel read one above its own most probable digit has rolled, so the wheels to its
 * right that look like 9 have rolled on to 0 (and one read one below: those that look like 0 are still at 9).
 * `00123.999` with its units wheel rolling to 4 is thus `00124.000` or `00123.999`, never `00124.999`.
 * Undefined when no number of that many wheels is in the range.
 */
export function mostProbableInRange(
  distributions: number[][],
  range: WheelRange,
): { digits: number[]; probability: number } | undefined {
  const wheels = distributions.length;
  const low = Math.max(0, Math.ceil(range.low));
  const high = Math.min(10 ** wheels - 1, Math.floor(range.high));
  if (low > high) return undefined;
  const lowDigits = [...String(low).padStart(wheels, '0')].map(Number);
  const highDigits = [...String(high).padStart(wheels, '0')].map(Number);
  // State = carry * 4 + (on the low end ? 1 : 0) + (on the high end ? 2 : 0); score = log probability of the best
  // prefix.
  let score = new Array<number>(4 * CARRIES.length).fill(-Infinity);
  score[BOTH_ENDS] = 0;
  const back: Array<Array<{ from: number; digit: number }>> = [];
  distributions.forEach((distribution, wheel) => {
    const next = new Array<number>(score.length).fill(-Infinity);
    const choices: Array<{ from: number; digit: number }> = [];
    const seen = mostProbableDigit(distribution);
    score.forEach((prefix, state) => {
      if (prefix === -Infinity) return;
      const carry = CARRIES[state >> 2]!;
      const onLow = (state & 1) !== 0,
        onHigh = (state & 2) !== 0;
      const carried = carry !== 'none' && seen === CARRY_FROM[carry] ? CARRY_TO[carry] : undefined;
      for (let digit = onLow ? lowDigits[wheel]! : 0; digit <= (onHigh ? highDigits[wheel]! : 9); digit++) {
        if (carried !== undefined && digit !== carried) continue;
        const nextCarry =
          carried !== undefined
            ? carry
            : digit === (seen + 1) % 10
              ? 'up'
              : digit === (seen + 9) % 10
                ? 'down'
                : 'none';
        const target =
          4 * CARRIES.indexOf(nextCarry) +
          (onLow && digit === lowDigits[wheel] ? 1 : 0) +
          (onHigh && digit === highDigits[wheel] ? 2 : 0);
        const candidate = prefix + Math.log(Math.max(distribution[digit]!, 1e-12));
        if (candidate > next[target]!) {
          next[target] = candidate;
          choices[target] = { from: state, digit };
        }
      }
    });
    back.push(choices);
    score = next;
  });
  const best = Math.max(...score);
  if (best === -Infinity) return undefined;
  let state = score.indexOf(best);
  const digits: number[] = [];
  for (let wheel = wheels - 1; wheel >= 0; wheel--) {
    const { from, digit } = back[wheel]![state]!;
    digits.unshift(digit);
    state = from;
  }
  return { digits, probability: Math.exp(best) };
}

const CARRIES = ['none', 'up', 'down'] as const;
const BOTH_ENDS = 3;
/** A running carry turns the wheels that look like CARRY_FROM into CARRY_TO. */
const CARRY_FROM = { up: 9, down: 0 } as const;
const CARRY_TO = { up: 0, down: 9 } as const;

/**
 * The strip's most probable reading (on its wheels, in its layout) whose value in m³ lies between `min` and `max`:
 * the fractional wheels are the ones after the point. Undefined when its wheels cannot show such a value.
 */
export function readWithinValues(
  strip: LayoutReading,
  values: { min: number; max: number },
): LayoutReading | undefined {
  const unitsPerM3 = 10 ** (strip.text.split('.')[1]?.length ?? 0);
  // The tolerance keeps float products such as 0.1 * 1000 from moving an end by a unit.
  const range = { low: Math.ceil(values.min * unitsPerM3 - 1e-6), high: Math.floor(values.max * unitsPerM3 + 1e-6) };
  const best = mostProbableInRange(strip.digitDistributions, range);
  if (!best) return undefined;
  return {
    ...strip,
    text: inLayout(strip.text, best.digits),
    digitProbabilities: best.digits.map((digit, i) => strip.digitDistributions[i]![digit]!),
  };
}
