import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ImageError, normaliseImage } from '../images.ts';
import type { MeterExpectation } from '../pipeline/expect-reading.ts';
import { judgeReading, judgeUsual } from '../readers/judge-reading.ts';
import { ReaderError, type MeterReader } from '../readers/reader.ts';
import type { LabelledPhoto } from './dataset.ts';
import {
  BILLING_ERROR_M3,
  BILLING_ERROR_SHARE,
  type CalibrationScores,
  type EvalSummary,
  type ReliabilityBin,
  type ScoredCase,
} from './metrics.ts';

const PER_PHOTO_TIMEOUT_MS = 60_000;

/**
 * Reads the photos one at a time, recording what the reader answered. Each photo is first normalised as the
 * service normalises an upload (EXIF rotation, long side, JPEG), so the reader sees what it sees in production;
 * latency is the reader's own, normalisation not included. With `expectationFor`, each photo is read within what the
 * service would expect of it (its plausibility window and layout) and judged as the service judges it (the chain,
 * then the usual consumption), with the reference its reading bills from.
 */
export async function readPhotos(
  reader: MeterReader,
  dir: string,
  photos: LabelledPhoto[],
  imageOptions: { maxPixels: number; longSide: number },
  expectationFor?: (photo: LabelledPhoto) => MeterExpectation,
): Promise<ScoredCase[]> {
  const cases: ScoredCase[] = [];
  for (const photo of photos) {
    let image: Buffer;
    try {
      image = (await normaliseImage(await readFile(path.join(dir, photo.file)), imageOptions)).jpeg;
    } catch (error) {
      const problem = photoProblem(error);
      if (!problem) throw error;
      cases.push({ file: photo.file, accepted: photo.accepted, confidence: 0, latencyMs: 0, error: problem });
      continue;
    }
    const started = performance.now();
    const { window, layout, usual, reference } = expectationFor?.(photo) ?? {};
    const past = reference ? { past: { reference: reference.reading } } : {};
    try {
      const read = await reader.read(image, AbortSignal.timeout(PER_PHOTO_TIMEOUT_MS), window, layout);
      const reading = judgeUsual(judgeReading(read, window, layout), usual);
      cases.push({
        file: photo.file,
        accepted: photo.accepted,
        predicted: reading.reading,
        confidence: reading.confidence,
        latencyMs: performance.now() - started,
        plausibility: reading.plausibility,
        unconstrained: reading.unconstrainedReading,
        wholeUnitsAgreed: reading.wholeUnitsAgreed,
        raw: reading.raw,
        ...past,
      });
    } catch (error) {
      if (!(error instanceof ReaderError)) throw error;
      cases.push({
        file: photo.file,
        accepted: photo.accepted,
        confidence: 0,
        latencyMs: performance.now() - started,
        error: `${error.kind}: ${error.message}`,
        ...past,
      });
    }
  }
  return cases;
}

/** A photo that cannot be given to the reader is one miss that names the problem; anything else ends the run. */
function photoProblem(error: unknown): string | undefined {
  if (error instanceof ImageError) return `image: ${error.message}`;
  if ((error as NodeJS.ErrnoException).code === 'ENOENT')
    return 'missing: labels.csv names it, but there is no such file';
  return undefined;
}

const percent = (value: number | null) => (value === null ? '   n/a' : `${(100 * value).toFixed(1).padStart(5)}%`);

/** The reliability table: each confidence bin's readings, mean confidence and exact share. */
export function formatReliability(bins: ReliabilityBin[]): string {
  return [
    '  reliability (confidence bin: readings, mean confidence, exact)',
    ...bins.map(
      (bin) =>
        `    ${String(bin.from).padStart(3)}–${String(bin.to).padEnd(3)}  ${String(bin.readings).padStart(4)}  ` +
        `${bin.meanConfidence === null ? '  n/a' : bin.meanConfidence.toFixed(1).padStart(5)}  ${percent(bin.accuracy)}`,
    ),
  ].join('\n');
}

function fixed(value: number | null | undefined, digits: number): string {
  return value === null || value === undefined ? 'n/a' : value.toFixed(digits);
}

/** The calibration scores as the report prints them. */
export function formatCalibration({ brier, expectedError }: CalibrationScores): string {
  if (brier === null || expectedError === null) return 'n/a (no readings)';
  return `Brier ${brier.toFixed(3)}, expected calibration error ${expectedError.toFixed(1)} points (lower is better)`;
}

/** The headline rates of a summary, as its report and a comparison of two name them. */
const HEADLINE: Array<[string, (summary: EvalSummary) => number]> = [
  ['exact reading', (summary) => summary.exact],
  ['last digit within ±1', (summary) => summary.lastDigitWithinOne],
  ['whole units exact', (summary) => summary.wholeUnitExact],
  ['per-digit accuracy', (summary) => summary.digitAccuracy],
];
const LABEL_WIDTH = 28;

export function formatSummary(title: string, summary: EvalSummary): string {
  const lines = [
    `${title}: ${summary.photos} photos`,
    ...HEADLINE.map(([label, rate]) => `  ${label.padEnd(LABEL_WIDTH)}${percent(rate(summary))}`),
    '  selective accuracy (exact among readings at or above the confidence, share of photos covered)',
    ...summary.selective.map(
      (s) =>
        `    confidence ≥ ${String(s.threshold).padStart(2)}          ${percent(s.accuracy)}  of ${percent(s.coverage)}`,
    ),
    formatReliability(summary.reliability),
    `  calibration                 ${formatCalibration(summary.calibration)}`,
    `  latency per photo           p50 ${summary.latencyMs.p50.toFixed(0)} ms, p95 ${summary.latencyMs.p95.toFixed(0)} ms`,
  ];
  const { withWindow, confident, ...judged } = summary.plausibility;
  if (withWindow) {
    const corrections = `${judged.correctionsWholeUnitsRight} of ${judged.corrections} right in whole units, ${judged.correctionsExact} exact`;
    lines.push(
      `  with the previous reading (plausibility window)`,
      `    implausible               ${percent(judged.implausible)}`,
      `    corrected                 ${percent(judged.corrected)}  (${corrections})`,
    );
  }
  lines.push(
    `  flagged                     ${percent(judged.flagged)}  (no reading ${percent(judged.noReading).trim()}${withWindow ? ', the rest implausible' : ''})`,
    `  readings not flagged: ${judged.notFlagged}; whole units exact ${percent(judged.wholeUnitExactNotFlagged)}, exact ${percent(judged.exactNotFlagged)}`,
    `  ok/corrected${withWindow ? '' : '/unknown'} at confidence ≥ ${confident.threshold}: exact ${percent(confident.accuracy)}, ` +
      `whole units ${percent(confident.wholeUnitAccuracy)} of ${percent(confident.coverage)}; ${confident.wholeUnitMisreads} wrong in whole units`,
  );
  if (summary.review) {
    const {
      reviewBelow,
      needsReview,
      reasons,
      rightInWholeUnits: right,
      agreedBelow,
      billable,
      wholeUnitsRightBillable,
      billingErrors,
      byThreshold,
    } = summary.review;
    const reason = (name: string, share: number, rightShare: number) =>
      `${name} ${percent(share).trim()} (${percent(rightShare).trim()} right)`;
    const why = [
      `no reading ${percent(reasons.noReading).trim()}`,
      reason('implausible', reasons.implausible, right.implausible),
      reason('suspicious', reasons.suspicious, right.suspicious),
      reason('less confident', reasons.lessConfident, right.lessConfident),
    ].join(', ');
    lines.push(
      `  as billed on needs_review (review below confidence ${reviewBelow}, the account default)`,
      `    needs review              ${percent(needsReview)}  (${why}; right: in whole units all the same)`,
      `    not needing review: ${billable}; whole units right ${percent(wholeUnitsRightBillable).trim()}; ` +
        `billing errors ${billingErrors.length} (off the true consumption by more than ${BILLING_ERROR_M3} m³ and ${100 * BILLING_ERROR_SHARE}% of it)`,
      `      ${agreedBelow.readings} of them below ${reviewBelow}, their whole units agreed; whole units right ` +
        `${percent(agreedBelow.wholeUnitsRight).trim()}`,
      ...billingErrors.map(
        (e) => `      ${e.file}: read ${e.reading} against ${e.reference}, bills ${e.billed} m³, truly ${e.truly} m³`,
      ),
      '    at other review thresholds (needs review; not needing review, whole units right among them, billing errors)',
      ...byThreshold.map(
        (at) =>
          `      below ${String(at.reviewBelow).padStart(3)}         ${percent(at.needsReview)}  ${String(at.billable).padStart(4)}  ` +
          `${percent(at.wholeUnitsRightBillable)}  ${String(at.billingErrors).padStart(3)}`,
      ),
    );
  }
  if (summary.worst.length) {
    lines.push('  worst misreads (most confident first)');
    for (const c of summary.worst) {
      const judgement =
        c.plausibility && c.plausibility !== 'unknown'
          ? ` (${c.plausibility}${c.unconstrained ? ` from ${c.unconstrained}` : ''})`
          : '';
      lines.push(
        `    ${c.file}: read ${c.predicted ?? `nothing (${c.error})`} at ${c.confidence}${judgement}, expected ${c.accepted.join(' | ')}`,
      );
    }
  }
  return lines.join('\n');
}

/**
 * The headline rates, the selective accuracies and the median latency of `baseline` (an earlier run: other weights,
 * say) beside those of `current`.
 */
export function formatComparison(title: string, baseline: EvalSummary, current: EvalSummary): string {
  const beside = (label: string, value: (summary: EvalSummary) => string) =>
    `  ${label.padEnd(LABEL_WIDTH)}${value(baseline).padStart(10)}${value(current).padStart(10)}`;
  const selective = (summary: EvalSummary, threshold: number) =>
    summary.selective.find((s) => s.threshold === threshold);
  return [
    `${title}: ${baseline.photos} and ${current.photos} photos`,
    `  ${''.padEnd(LABEL_WIDTH)}${'baseline'.padStart(10)}${'this run'.padStart(10)}`,
    ...HEADLINE.map(([label, rate]) => beside(label, (summary) => percent(rate(summary)))),
    ...current.selective.flatMap(({ threshold }) => [
      beside(`exact at confidence ≥ ${threshold}`, (summary) =>
        percent(selective(summary, threshold)?.accuracy ?? null),
      ),
      beside(`share at confidence ≥ ${threshold}`, (summary) =>
        percent(selective(summary, threshold)?.coverage ?? null),
      ),
    ]),
    // Reports written before the calibration scores have none.
    beside('Brier score', (summary) => fixed(summary.calibration?.brier, 3)),
    beside('calibration error (points)', (summary) => fixed(summary.calibration?.expectedError, 1)),
    beside('latency p50', (summary) => `${summary.latencyMs.p50.toFixed(0)} ms`),
  ].join('\n');
}
