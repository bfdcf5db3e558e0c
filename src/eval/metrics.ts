/** Scoring of meter readings against labels, as `meterlens eval` reports it. */
import { ENVIRONMENT } from '../config.ts';
import { needsReview } from '../meters/review.ts';
import { DEFAULT_REVIEW_BELOW } from '../plausibility-policy.ts';
import type { Plausibility } from '../readers/reader.ts';

export interface ScoredCase {
  file: string;
  /** Every reading that counts as correct: the label first, then its alternatives (mid-roll wheels). */
  accepted: string[];
  /** Undefined when the reader gave no reading. */
  predicted?: string;
  /** 0–100; 0 when the reader gave no reading. */
  confidence: number;
  latencyMs: number;
  error?: string;
  /** How the reading stood against the photo's plausibility window (`unknown` without one). */
  plausibility?: Plausibility;
  /** The reading without the window, when the window changed it. */
  unconstrained?: string;
  /** What the reader said of its reading beside it (the local reader: its confidence evidence). */
  raw?: unknown;
  /** The reader's MeterReading `wholeUnitsAgreed`. */
  wholeUnitsAgreed?: boolean;
  /** With a grown past (`eval --previous dated|manual`): the reference the reading bills from. */
  past?: { reference: string };
}

export const CONFIDENCE_THRESHOLDS = [50, 80, 90, 95];

export interface SelectiveAccuracy {
  threshold: number;
  /** Share of photos read with at least this confidence. */
  coverage: number;
  /** Exact-match rate among them; null when none. */
  accuracy: number | null;
}

/** Readings whose confidence falls in [from, to) (the last bin includes 100), against how many of them are right. */
export interface ReliabilityBin {
  from: number;
  to: number;
  readings: number;
  /** Mean confidence of the readings in the bin; null when none. */
  meanConfidence: number | null;
  /** Exact-match rate among them; null when none. */
  accuracy: number | null;
}

export const RELIABILITY_BIN_WIDTH = 10;

/** How far the confidence can be read as the chance of being right, over the readings made. */
export interface CalibrationScores {
  /** Mean squared gap between confidence (as a share) and the reading being exact (1) or not (0): lower is better. */
  brier: number | null;
  /**
   * Expected calibration error: the gap between each reliability bin's mean confidence and its accuracy, in points,
   * averaged over the readings.
   */
  expectedError: number | null;
}

export interface EvalSummary {
  photos: number;
  exact: number;
  lastDigitWithinOne: number;
  wholeUnitExact: number;
  digitAccuracy: number;
  selective: SelectiveAccuracy[];
  reliability: ReliabilityBin[];
  calibration: CalibrationScores;
  latencyMs: { p50: number; p95: number };
  plausibility: PlausibilitySummary;
  /** With a grown past only. */
  review?: ReviewSummary;
  worst: ScoredCase[];
}

/**
 * What a client billing on needs_review would bill (docs/readings.md, "needs_review") at the review threshold
 * `reviewBelow`.
 */
export interface ReviewAt {
  reviewBelow: number;
  /** Share of the photos whose reading needs review (a photo with no reading does). */
  needsReview: number;
  /** Readings not needing review: how many, and the share of them right in whole units. */
  billable: number;
  wholeUnitsRightBillable: number | null;
  /** The readings not needing review that bill a consumption far off (isBillingError). */
  billingErrors: BillingError[];
}

/**
 * needs_review over the photos read with a grown past: at the account default threshold, why, and at other thresholds.
 */
export interface ReviewSummary extends ReviewAt {
  /**
   * Of the photos needing review, the shares of all photos for each reason: no reading, flagged so, or below the
   * threshold…
   */
  reasons: { noReading: number; implausible: number; suspicious: number; lessConfident: number };
  /**
   * …and for each reason with a reading, the share of all photos whose reading is right in whole units all the same.
   */
  rightInWholeUnits: { implausible: number; suspicious: number; lessConfident: number };
  /**
   * The readings that need no review only because their whole units are agreed (less confident than the threshold):
   * how many, and the share of them right in whole units.
   */
  agreedBelow: { readings: number; wholeUnitsRight: number | null };
  /** The same judged at each of REVIEW_THRESHOLDS: what choosing an account's threshold trades. */
  byThreshold: Array<Omit<ReviewAt, 'billingErrors'> & { billingErrors: number }>;
}

/** The review thresholds the review summary is also judged at. */
export const REVIEW_THRESHOLDS = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95];

export interface BillingError {
  file: string;
  reading: string;
  reference: string;
  /** m³ since the reference, as the reading bills it and as the label has it. */
  billed: number;
  truly: number;
}

/**
 * A reading bills a consumption far off when what it bills since the reference is off the truth by more than
 * BILLING_ERROR_M3 and by more than BILLING_ERROR_SHARE of the true consumption: a wheel caught mid-roll is no
 * billing error; a misread whole-unit wheel is, unless the meter used far more than it is off.
 */
export const BILLING_ERROR_M3 = 1;
export const BILLING_ERROR_SHARE = 0.1;

export interface PlausibilitySummary {
  /** Photos read with a plausibility window. */
  withWindow: number;
  /** Shares of all photos. */
  implausible: number;
  noReading: number;
  /** Implausible or no reading: what nobody should bill without a look. */
  flagged: number;
  corrected: number;
  corrections: number;
  correctionsWholeUnitsRight: number;
  correctionsExact: number;
  /** The readings not flagged: how many, and the shares of them right in whole units and exact. */
  notFlagged: number;
  wholeUnitExactNotFlagged: number;
  exactNotFlagged: number;
  /** Readings not flagged implausible with confidence at least `threshold` (the service's ESCALATE_BELOW). */
  confident: {
    threshold: number;
    coverage: number;
    accuracy: number | null;
    wholeUnitAccuracy: number | null;
    wholeUnitMisreads: number;
  };
}

/** Readings compare as numbers: labels may drop leading and trailing zeros (`454.0` is `00454.000`). */
export function sameReading(predicted: string, label: string): boolean {
  return Number(predicted) === Number(label);
}

export function isExact(c: ScoredCase): boolean {
  return c.predicted !== undefined && c.accepted.some((label) => sameReading(c.predicted!, label));
}

/** Off by at most one unit of the last wheel (the finer of the two readings' last decimal places). */
export function isWithinOneOfLastDigit(c: ScoredCase): boolean {
  const predicted = c.predicted;
  if (predicted === undefined) return false;
  return c.accepted.some((label) => {
    const unit = 10 ** -Math.max(fractionDigits(predicted), fractionDigits(label));
    return Math.abs(Number(predicted) - Number(label)) <= unit * (1 + 1e-9);
  });
}

export function isWholeUnitExact(c: ScoredCase): boolean {
  const predicted = c.predicted;
  return predicted !== undefined && c.accepted.some((label) => wholeUnits(predicted) === wholeUnits(label));
}

/**
 * Digits right, aligned at the decimal point, out of the label's digits; both sides are padded with the zeros
 * they dropped to the wider of the two layouts. The label or alternative that matches best is used.
 */
export function digitMatches(c: ScoredCase): { matched: number; total: number } {
  let best = { matched: 0, total: alignedDigits(c.accepted[0]!, c.predicted ?? '').label.length };
  if (c.predicted === undefined) return best;
  for (const label of c.accepted) {
    const aligned = alignedDigits(label, c.predicted);
    let matched = 0;
    for (let i = 0; i < aligned.label.length; i++) if (aligned.label[i] === aligned.predicted[i]) matched++;
    if (matched / aligned.label.length > best.matched / best.total) best = { matched, total: aligned.label.length };
  }
  return best;
}

/** The readings at or above `threshold`: their share of the photos, and how many of them are exact. */
export function selectiveAccuracy(cases: ScoredCase[], threshold: number): SelectiveAccuracy {
  const covered = cases.filter((c) => c.predicted !== undefined && c.confidence >= threshold);
  return {
    threshold,
    coverage: ratio(covered.length, cases.length),
    accuracy: covered.length ? ratio(covered.filter(isExact).length, covered.length) : null,
  };
}

/** `confidentAt`: the threshold readings are judged kept local at, by default the service's default ESCALATE_BELOW. */
export function summarise(
  cases: ScoredCase[],
  worstCount = 10,
  confidentAt: number = ENVIRONMENT.properties.ESCALATE_BELOW.default,
): EvalSummary {
  const share = (test: (c: ScoredCase) => boolean) => ratio(cases.filter(test).length, cases.length);
  let matched = 0,
    total = 0;
  for (const c of cases) {
    const digits = digitMatches(c);
    matched += digits.matched;
    total += digits.total;
  }
  const selective = CONFIDENCE_THRESHOLDS.map((threshold) => selectiveAccuracy(cases, threshold));
  const reliability = reliabilityTable(cases);
  const latencies = cases.map((c) => c.latencyMs).sort((a, b) => a - b);
  const worst = cases
    .filter((c) => !isExact(c))
    .sort((a, b) => b.confidence - a.confidence)
    .slice(0, worstCount);
  return {
    photos: cases.length,
    exact: share(isExact),
    lastDigitWithinOne: share(isWithinOneOfLastDigit),
    wholeUnitExact: share(isWholeUnitExact),
    digitAccuracy: ratio(matched, total),
    selective,
    reliability,
    calibration: calibrationScores(cases, reliability),
    latencyMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95) },
    plausibility: summarisePlausibility(cases, confidentAt),
    ...(cases.some((c) => c.past) ? { review: summariseReview(cases) } : {}),
    worst,
  };
}

/**
 * needs_review over the photos read with a grown past, as the service judges it at the account default threshold
 * (and at each of REVIEW_THRESHOLDS), and what the readings that do not need it would bill.
 */
export function summariseReview(cases: ScoredCase[]): ReviewSummary {
  const { billable, ...atDefault } = reviewAt(cases, DEFAULT_REVIEW_BELOW);
  const needing = cases.filter((c) => !billable.includes(c));
  const share = (test: (c: ScoredCase) => boolean) => ratio(needing.filter(test).length, cases.length);
  const flagged = (c: ScoredCase) => c.plausibility === 'implausible' || c.plausibility === 'suspicious';
  const reasons = {
    implausible: (c: ScoredCase) => c.predicted !== undefined && c.plausibility === 'implausible',
    suspicious: (c: ScoredCase) => c.predicted !== undefined && c.plausibility === 'suspicious',
    lessConfident: (c: ScoredCase) => c.predicted !== undefined && !flagged(c),
  };
  const rightAnyway = (reason: (c: ScoredCase) => boolean) => share((c) => reason(c) && isWholeUnitExact(c));
  const agreedBelow = billable.filter((c) => c.wholeUnitsAgreed && c.confidence < atDefault.reviewBelow);
  return {
    ...atDefault,
    billable: billable.length,
    reasons: {
      noReading: share((c) => c.predicted === undefined),
      implausible: share(reasons.implausible),
      suspicious: share(reasons.suspicious),
      lessConfident: share(reasons.lessConfident),
    },
    rightInWholeUnits: {
      implausible: rightAnyway(reasons.implausible),
      suspicious: rightAnyway(reasons.suspicious),
      lessConfident: rightAnyway(reasons.lessConfident),
    },
    agreedBelow: {
      readings: agreedBelow.length,
      wholeUnitsRight: agreedBelow.length
        ? ratio(agreedBelow.filter(isWholeUnitExact).length, agreedBelow.length)
        : null,
    },
    byThreshold: REVIEW_THRESHOLDS.map((reviewBelow) => {
      const at = reviewAt(cases, reviewBelow);
      return { ...at, billable: at.billable.length, billingErrors: at.billingErrors.length };
    }),
  };
}

/**
 * needs_review of each photo at the threshold `reviewBelow` (the service's rule), and what the readings that do not
 * need it bill.
 */
function reviewAt(cases: ScoredCase[], reviewBelow: number): Omit<ReviewAt, 'billable'> & { billable: ScoredCase[] } {
  const billable = cases.filter(
    (c) =>
      c.predicted !== undefined &&
      c.past &&
      !needsReview({
        status: 'completed',
        plausibility: c.plausibility ?? null,
        confidence: c.confidence,
        reviewBelow,
        wholeUnitsAgreed: c.wholeUnitsAgreed ?? false,
        byPerson: false,
      }),
  );
  return {
    reviewBelow,
    needsReview: ratio(cases.length - billable.length, cases.length),
    billable,
    wholeUnitsRightBillable: billable.length ? ratio(billable.filter(isWholeUnitExact).length, billable.length) : null,
    billingErrors: billable.map(billingError).filter((error) => error !== undefined),
  };
}

/**
 * The consumption a reading bills since its past's reference against the truth (its closest label); undefined when not
 * far off.
 */
export function billingError(c: ScoredCase): BillingError | undefined {
  if (c.predicted === undefined || !c.past) return undefined;
  const reference = Number(c.past.reference);
  const billed = Number(c.predicted) - reference;
  const truly = c.accepted
    .map((label) => Number(label) - reference)
    .reduce((a, b) => (Math.abs(billed - b) < Math.abs(billed - a) ? b : a));
  const off = Math.abs(billed - truly);
  if (off <= BILLING_ERROR_M3 || off <= BILLING_ERROR_SHARE * Math.abs(truly)) return undefined;
  const m3 = (value: number) => Math.round(value * 1000) / 1000;
  return { file: c.file, reading: c.predicted, reference: c.past.reference, billed: m3(billed), truly: m3(truly) };
}

/** Confidence bins of RELIABILITY_BIN_WIDTH against the share of their readings that are exact. */
export function reliabilityTable(cases: ScoredCase[]): ReliabilityBin[] {
  const read = cases.filter((c) => c.predicted !== undefined);
  return Array.from({ length: 100 / RELIABILITY_BIN_WIDTH }, (_, index) => {
    const from = index * RELIABILITY_BIN_WIDTH,
      to = from + RELIABILITY_BIN_WIDTH;
    const inBin = read.filter((c) => c.confidence >= from && (c.confidence < to || to === 100));
    return {
      from,
      to,
      readings: inBin.length,
      meanConfidence: inBin.length ? inBin.reduce((sum, c) => sum + c.confidence, 0) / inBin.length : null,
      accuracy: inBin.length ? ratio(inBin.filter(isExact).length, inBin.length) : null,
    };
  });
}

/** The Brier score and the expected calibration error (from the reliability table) of the readings made. */
export function calibrationScores(cases: ScoredCase[], reliability: ReliabilityBin[]): CalibrationScores {
  const read = cases.filter((c) => c.predicted !== undefined);
  if (read.length === 0) return { brier: null, expectedError: null };
  const brier = read.reduce((sum, c) => sum + (c.confidence / 100 - (isExact(c) ? 1 : 0)) ** 2, 0) / read.length;
  const gaps = reliability.reduce(
    (sum, bin) => sum + (bin.readings ? bin.readings * Math.abs(bin.meanConfidence! - 100 * bin.accuracy!) : 0),
    0,
  );
  return { brier, expectedError: gaps / read.length };
}

/** What reading within the plausibility window did: flagged, corrected (and whether rightly), and what stands. */
export function summarisePlausibility(cases: ScoredCase[], confidentAt: number): PlausibilitySummary {
  const count = (list: ScoredCase[], test: (c: ScoredCase) => boolean) => list.filter(test).length;
  const corrected = cases.filter((c) => c.plausibility === 'corrected');
  const implausible = count(cases, (c) => c.plausibility === 'implausible');
  const noReading = count(cases, (c) => c.predicted === undefined);
  const standing = cases.filter((c) => c.predicted !== undefined && c.plausibility !== 'implausible');
  const confident = standing.filter((c) => c.confidence >= confidentAt);
  return {
    withWindow: count(cases, (c) => c.plausibility !== undefined && c.plausibility !== 'unknown'),
    implausible: ratio(implausible, cases.length),
    noReading: ratio(noReading, cases.length),
    flagged: ratio(implausible + noReading, cases.length),
    corrected: ratio(corrected.length, cases.length),
    corrections: corrected.length,
    correctionsWholeUnitsRight: count(corrected, isWholeUnitExact),
    correctionsExact: count(corrected, isExact),
    notFlagged: standing.length,
    wholeUnitExactNotFlagged: ratio(count(standing, isWholeUnitExact), standing.length),
    exactNotFlagged: ratio(count(standing, isExact), standing.length),
    confident: {
      threshold: confidentAt,
      coverage: ratio(confident.length, cases.length),
      accuracy: confident.length ? ratio(count(confident, isExact), confident.length) : null,
      wholeUnitAccuracy: confident.length ? ratio(count(confident, isWholeUnitExact), confident.length) : null,
      wholeUnitMisreads: count(confident, (c) => !isWholeUnitExact(c)),
    },
  };
}

/** Nearest-rank percentile of ascending values; 0 for none. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function ratio(part: number, whole: number): number {
  return whole === 0 ? 0 : part / whole;
}

function fractionDigits(reading: string): number {
  const point = reading.indexOf('.');
  return point < 0 ? 0 : reading.length - point - 1;
}

function wholeUnits(reading: string): string {
  return String(Math.trunc(Number(reading)));
}

function alignedDigits(label: string, predicted: string): { label: string; predicted: string } {
  const [labelWhole = '', labelFraction = ''] = label.split('.');
  const [predictedWhole = '', predictedFraction = ''] = predicted.split('.');
  const wholeWidth = Math.max(labelWhole.length, predictedWhole.length);
  const fractionWidth = Math.max(labelFraction.length, predictedFraction.length);
  return {
    label: labelWhole.padStart(wholeWidth, '0') + labelFraction.padEnd(fractionWidth, '0'),
    predicted: predictedWhole.padStart(wholeWidth, '0') + predictedFraction.padEnd(fractionWidth, '0'),
  };
}
