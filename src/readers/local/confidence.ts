import { parseJsonFile } from './json-file.ts';

/**
 * How sure the local reader is of a reading. Its confidence is the product of its digits' probabilities (and the
 * point's, the orientation's, the layout's) and its weakest digit's probability, put through the weights'
 * calibration (below). Beside them, `raw.evidence` reports how far the photo's other readings agree with it.
 * `ml/fit_confidence.ts` and `ml/fit_calibration.ts` measure what weighing these agreements would do: on the
 * validation split they kept fewer right readings local and no fewer wrong ones, and each draw of networks that had
 * not learned the calibration photos weighed a different agreement (ml/EXPERIMENTS.md, "Confidence on the training
 * photos (v6)", "Agreement as confidence, on left-out networks"). So they are reported, not used, but for one: a
 * layout most of the photo's readings do not read (`givenLayouts`).
 */

/** Every share is 0–1. */
export interface ConfidenceEvidence {
  /**
   * The product the confidence is calibrated from: the digits' (and the point's) probabilities × orientation belief ×
   * layout fit, 0–100, lowered for a layout most of the photo's readings do not read (`givenLayouts`).
   */
  product: number;
  /**
   * The least probable digit's probability, 0–100, lowered alike (`givenLayouts`). One wheel at even odds is a
   * likelier miss than the same product spread over every wheel (ml/EXPERIMENTS.md, "The weakest wheel (v17)").
   */
  weakestDigit: number;
  /**
   * The reading's wheel layout (`ddddd.ddd`), whose intercept the calibration takes: the wheel reader votes on the
   * wheels of one layout only, so the same product means more there (ml/EXPERIMENTS.md, "One intercept a layout
   * (v20)").
   */
  layout: string;
  /** Share of the strip readers whose own reading of the chosen window is the reading. */
  readersAgreeing: number;
  /** Share of the candidate windows (both localisers') read as the reading. */
  candidatesAgreeing: number;
  /** Share of the candidate windows, and of the strip readers on the chosen one, read in the reading's layout. */
  layoutsAgreeing: number;
}

/** The wheel layout of a reading, as in spec.ts's LAYOUTS (`ddddd.ddd`). */
export function layoutOf(text: string): string {
  return text.replace(/\d/g, 'd');
}

/**
 * A reading in a layout that under half of the photo's readings read (its candidate windows' and the strip readers'
 * on its window) is no surer than that share: the photo's readings mostly see a counter of another layout, and its
 * product and weakest digit (`sureness`, 0–100), which weigh the layout only within the chosen window, do not know
 * it. On the training photos three of the four readings so were wrong (of all readings, 1.7%); a 5 + 3 counter read
 * as five wheels is the confident miss this guards against (ml/EXPERIMENTS.md, "v14 (2026-11-24): a layout few of
 * the photo's readings read").
 */
export function givenLayouts(sureness: number, layoutsAgreeing: number): number {
  return layoutsAgreeing < 0.5 ? sureness * layoutsAgreeing : sureness;
}

/** Share of `values` that pass `test`; 0 for none. */
export function shareOf<T>(values: T[], test: (value: T) => boolean): number {
  return values.length === 0 ? 0 : values.filter(test).length / values.length;
}

/**
 * The weights' calibration (CALIBRATION_FILE beside them, fitted by ml/fit_calibration.ts): the confidence the reader
 * reports is 100 × σ(slope × logit(product) + weakestDigitSlope × logit(weakest digit) + the layout's intercept), its
 * estimated chance of being exact, so a client can set a threshold on it. Weights without one report the product.
 */
export interface Calibration {
  slope: number;
  /** 0 for a calibration that weighs the product alone (a file without it). */
  weakestDigitSlope: number;
  /** The intercept of a layout without its own in `layoutIntercepts` (the fit writes the lowest of them). */
  intercept: number;
  /** Each layout's intercept (`ddddd.ddd`: 2.4); empty (a file without it) for one intercept for every layout. */
  layoutIntercepts: Record<string, number>;
  /** What it was fitted on, for the people who read the file. */
  fittedOn: string;
}

export const CALIBRATION_FILE = 'calibration.json';

/** Probabilities are kept this far (in points) from 0 and 100, where their logit is infinite. */
const PROBABILITY_EDGE = 0.5;

/** The logit of a probability in points (0–100). */
export function logitOf(points: number): number {
  const share = Math.min(100 - PROBABILITY_EDGE, Math.max(PROBABILITY_EDGE, points)) / 100;
  return Math.log(share / (1 - share));
}

/** What the calibration weighs, in the order of its slopes: the logits of the product and of the weakest digit. */
export function calibrationFeatures({
  product,
  weakestDigit,
}: Pick<Sureness, 'product' | 'weakestDigit'>): [number, number] {
  return [logitOf(product), logitOf(weakestDigit)];
}

export type Sureness = Pick<ConfidenceEvidence, 'product' | 'weakestDigit' | 'layout'>;

/** The reading's confidence as the calibration reports it (0–100); the product itself without one. */
export function calibrate(sureness: Sureness, calibration: Calibration | undefined): number {
  if (!calibration) return sureness.product;
  const [productLogit, weakestDigitLogit] = calibrationFeatures(sureness);
  const intercept = calibration.layoutIntercepts[sureness.layout] ?? calibration.intercept;
  return (
    100 /
    (1 + Math.exp(-(calibration.slope * productLogit + calibration.weakestDigitSlope * weakestDigitLogit + intercept)))
  );
}

/** The calibration in `file`, checked; a file that is not one stops the model from loading. */
export function parseCalibration(text: string, file: string): Calibration {
  const parsed = parseJsonFile(text, file) as Partial<Calibration> | null;
  const { slope, weakestDigitSlope = 0, intercept, layoutIntercepts = {}, fittedOn } = parsed ?? {};
  if (
    !Number.isFinite(slope) ||
    !(slope! > 0) ||
    !Number.isFinite(weakestDigitSlope) ||
    !(weakestDigitSlope >= 0) ||
    !Number.isFinite(intercept) ||
    !isByLayout(layoutIntercepts, Number.isFinite) ||
    typeof fittedOn !== 'string'
  ) {
    throw new Error(
      `${file} is not a calibration: it needs a positive number "slope", a number "intercept", a "fittedOn" text and, if any, ` +
        'a number "weakestDigitSlope" of 0 or more and "layoutIntercepts", a number for each layout such as "ddddd.ddd"',
    );
  }
  return { slope: slope!, weakestDigitSlope, intercept: intercept!, layoutIntercepts, fittedOn };
}

/** Whether `value` gives, for each layout it names (such as "ddddd.ddd"), a number `isValue` accepts. */
export function isByLayout(value: unknown, isValue: (entry: number) => boolean): value is Record<string, number> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.entries(value).every(
      ([layout, entry]) => /^d+(\.d+)?$/.test(layout) && typeof entry === 'number' && isValue(entry),
    )
  );
}
