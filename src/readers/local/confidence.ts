/**
 * How sure the local reader is of a reading. Its confidence is the product of its digits' probabilities (and the
 * point's, the orientation's, the layout's) put through the weights' calibration (below). Beside it, `raw.evidence`
 * reports the product and how far the photo's other readings agree with it. `ml/fit_confidence.ts` measures what a
 * product lowered by these disagreements would do (MODEL_CARD.md: on the validation split it kept fewer right
 * readings local and no fewer wrong ones, so they are reported, not used), but for one: a layout most of the photo's
 * readings do not read (`productGivenLayouts`).
 */

/** Every share is 0–1. */
export interface ConfidenceEvidence {
  /**
   * The product the confidence is calibrated from: the digits' (and the point's) probabilities × orientation belief ×
   * layout fit, 0–100, lowered for a layout most of the photo's readings do not read (`productGivenLayouts`).
   */
  product: number;
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
 * product, which weighs the layout only within the chosen window, does not know it. On the training photos three of
 * the four readings so were wrong (of all readings, 1.7%); a 5 + 3 counter read as five wheels is the confident miss
 * this guards against (issue #15, MODEL_CARD.md "Now (`local-crnn-v14`)").
 */
export function productGivenLayouts(product: number, layoutsAgreeing: number): number {
  return layoutsAgreeing < 0.5 ? product * layoutsAgreeing : product;
}

/** Share of `values` that pass `test`; 0 for none. */
export function shareOf<T>(values: T[], test: (value: T) => boolean): number {
  return values.length === 0 ? 0 : values.filter(test).length / values.length;
}

/**
 * The weights' calibration (CALIBRATION_FILE beside them, fitted by ml/fit_calibration.ts): the confidence the reader
 * reports is 100 × σ(slope × logit(product) + intercept), its estimated chance of being exact, so a client can set a
 * threshold on it. Weights without one report the product.
 */
export interface Calibration {
  slope: number;
  intercept: number;
  /** What it was fitted on, for the people who read the file. */
  fittedOn: string;
}

export const CALIBRATION_FILE = 'calibration.json';

/** Products are kept this far (in points) from 0 and 100, where their logit is infinite. */
const PRODUCT_EDGE = 0.5;

/** The logit of a confidence product (0–100), the one feature of the calibration. */
export function productLogit(product: number): number {
  const share = Math.min(100 - PRODUCT_EDGE, Math.max(PRODUCT_EDGE, product)) / 100;
  return Math.log(share / (1 - share));
}

/** The product as the calibration reports it (0–100); the product itself without one. */
export function calibrate(product: number, calibration: Calibration | undefined): number {
  if (!calibration) return product;
  return 100 / (1 + Math.exp(-(calibration.slope * productLogit(product) + calibration.intercept)));
}

/** The calibration in `file`, checked; a file that is not one stops the model from loading. */
export function parseCalibration(text: string, file: string): Calibration {
  let parsed: Partial<Calibration> | null;
  try {
    parsed = JSON.parse(text) as Partial<Calibration> | null;
  } catch (error) {
    throw new Error(`${file} is not JSON: ${(error as Error).message}`);
  }
  const { slope, intercept, fittedOn } = parsed ?? {};
  if (!Number.isFinite(slope) || !(slope! > 0) || !Number.isFinite(intercept) || typeof fittedOn !== 'string') {
    throw new Error(`${file} is not a calibration: it needs a positive number "slope", a number "intercept" and a "fittedOn" text`);
  }
  return { slope: slope!, intercept: intercept!, fittedOn };
}
