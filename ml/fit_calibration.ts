/**
 * Fits the local reader's calibration (src/readers/local/confidence.ts) and judges it (models/MODEL_CARD.md,
 * "Calibration"):
 *
 *   node ml/fit_calibration.ts [--set DIR] [--models DIR] [--output FILE] [--cache DIR] [--judge-with FILE]
 *
 * The calibration of the set of weights in --set (default models/noncommercial). The calibration photos
 * (ml/splits/<dataset>-calibration.txt: every fourth training photo of each labels.csv, in its order) are read with
 * the weights in --models, networks like the set's (the same files) that have not learned those photos: for
 * models/noncommercial by default ml/calibrating, its networks trained again without them (`sh ml/train.sh
 * calibration` trains them so, with `--leave-out`); for any other set by default the set itself, right where none of
 * its networks learned Toloka or BDCI 2020. A calibration fitted so has learned from those photos, whose licences
 * forbid commercial use: the default set (models/) ships none, so it is written there only to another --output
 * (`--set models --output /tmp/calibration.json` measures what one would say of it). A logistic regression
 * of "the reading is exact" on the logits of the confidence product and of the weakest digit's probability
 * (`calibrationFeatures`), with an intercept for each layout read, is fitted on the photos read and written to
 * --output (default the set's calibration.json). Then the calibration photos, and the validation split read with the
 * set, are judged with the product and with the calibration:
 * Brier score, selective accuracy, the reliability table and the ESCALATE_BELOW the calibration photos support (judged
 * on the photos fitted, and cross-validated). Beside them, not written: `--judge-with FILE`'s
 * calibration (the one shipped before, say) on the same readings, and a calibration fitted alike that also weighs
 * how far the photo's other readings agree (AGREEMENTS), measured here before the reader uses it (issue #15,
 * "test-time agreement as confidence"). `--cache DIR` keeps the readings in DIR and reuses them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MODEL_DIR, NONCOMMERCIAL_MODEL_DIR } from '../src/config.ts';
import { SHARED_DATASETS } from '../src/eval/dataset.ts';
import { isExact, selectiveAccuracy, type ScoredCase, type SelectiveAccuracy } from '../src/eval/metrics.ts';
import {
  CALIBRATION_FILE,
  calibrate,
  calibrationFeatures,
  parseCalibration,
  type Calibration,
  type ConfidenceEvidence,
} from '../src/readers/local/confidence.ts';
import { MODEL_FILES } from '../src/readers/local/model.ts';
import { WHEEL_READER_FILE } from '../src/readers/local/spec.ts';
import { fitLogisticNonNegative, outOfFoldProbabilities, predictLogistic } from './logistic.ts';
import { DATASETS, confidenceReport, percent, readSplit, withConfidence, type EvidenceCase } from './read_splits.ts';

/** The share of the readings kept local (at or above ESCALATE_BELOW) that should be exact (issue #15). */
const KEPT_EXACT = 0.99;
/**
 * The agreement shares (`raw.evidence`) the compared calibration weighs: the logarithm of each, floored, is a feature.
 */
const AGREEMENTS = ['readersAgreeing', 'candidatesAgreeing', 'layoutsAgreeing'] as const;
const AGREEMENT_FLOOR = 0.05;
/** L2 penalty on the weights: a handful of misreads must not drive a weight to infinity. */
const L2_PENALTY = 0.01;
/**
 * The ESCALATE_BELOW rule is judged out of sample too: each deal of the photos into folds fits the calibration again on
 * all folds but one.
 */
const CROSS_VALIDATION_FOLDS = 10;
const CROSS_VALIDATION_SEEDS = [1, 2, 3, 4, 5];

const { values } = parseArgs({
  options: {
    set: { type: 'string' },
    models: { type: 'string' },
    output: { type: 'string' },
    cache: { type: 'string' },
    'judge-with': { type: 'string' },
  },
});
if (!existsSync(SHARED_DATASETS)) {
  console.log(`skipped: no datasets at ${SHARED_DATASETS}`);
  process.exit(0);
}

const set = path.resolve(values.set ?? NONCOMMERCIAL_MODEL_DIR);
const models = path.resolve(
  values.models ?? (set === NONCOMMERCIAL_MODEL_DIR ? path.join(import.meta.dirname, 'calibrating') : set),
);
const output = path.resolve(values.output ?? path.join(set, CALIBRATION_FILE));
if (path.dirname(output) === DEFAULT_MODEL_DIR) {
  console.error(
    `no calibration fitted: ${DEFAULT_MODEL_DIR} ships none (one fitted on these photos learns from them); give --output another file`,
  );
  process.exit(1);
}
// A wheel reader (or network) the set has and --models lacks, or the other way round, reads otherwise than the set: a
// fit on that would be wrong.
const filesOf = (dir: string) => [...MODEL_FILES, WHEEL_READER_FILE].filter((file) => existsSync(path.join(dir, file)));
const [setFiles, modelFiles] = [filesOf(set), filesOf(models)];
if (setFiles.length === 0 || setFiles.join() !== modelFiles.join()) {
  console.error(
    `no calibration fitted: ${set} and ${models} must hold the same weights (they hold ${setFiles.join(', ') || 'none'}; ${modelFiles.join(', ') || 'none'}). sh ml/train.sh calibration trains what ml/calibrating lacks`,
  );
  process.exit(1);
}
const calibrationPhotos = await readSplit('calibration', models, values.cache);
const fitted = calibrationPhotos.filter((c) => c.evidence);
const exact = fitted.filter(isExact).length;
if (exact === 0 || exact === fitted.length) {
  // A logistic fit needs right and wrong readings both (weights trained with a small share of their steps read none).
  console.error(
    `no calibration fitted: ${fitted.length} calibration photos read, ${exact} exactly; it needs right and wrong readings both`,
  );
  process.exit(1);
}
if (fitted.some((c) => c.evidence!.layout === undefined)) {
  // Each intercept is fitted for a layout, which readings cached by an older copy of this script do not name.
  console.error(
    `no calibration fitted: the readings cached in ${values.cache} name no layout; read them again into a fresh --cache`,
  );
  process.exit(1);
}
const outcomes = fitted.map((c) => (isExact(c) ? 1 : 0));
// Each layout its own intercept: the commonest layout's is the fit's bias, every other one's an indicator added to it.
const [commonestLayout, ...otherLayouts] = commonestFirst(fitted.map((c) => c.evidence!.layout));
const withLayouts = (row: number[], evidence: ConfidenceEvidence) => [
  ...row,
  ...otherLayouts.map((layout) => (evidence.layout === layout ? 1 : 0)),
];
// A reading's product or weakest digit never makes it less sure the higher it is (parseCalibration refuses that); a
// layout may be read less or more surely than another.
const fitWithLayouts = (rows: number[][], rowOutcomes: number[]) =>
  fitLogisticNonNegative(rows, rowOutcomes, L2_PENALTY, otherLayouts.length);
const features = fitted.map((c) => withLayouts(calibrationFeatures(c.evidence!), c.evidence!));
const {
  weights: [slope, weakestDigitSlope, ...layoutWeights],
  bias,
} = fitWithLayouts(features, outcomes);
const layoutIntercepts = Object.fromEntries([
  [commonestLayout!, bias],
  ...otherLayouts.map((layout, i) => [layout, bias + layoutWeights[i]!] as const),
]);
const calibration: Calibration = {
  slope: slope!,
  weakestDigitSlope: weakestDigitSlope!,
  // A layout the calibration photos did not show is taken as the least surely read of those they did.
  intercept: Math.min(...Object.values(layoutIntercepts)),
  layoutIntercepts,
  fittedOn:
    `${fitted.length} calibration photos read (ml/splits/*-calibration.txt, ${exact} exactly) by ` +
    `${modelFiles.includes(WHEEL_READER_FILE) ? 'localisers, strip readers and a wheel reader' : 'localisers and strip readers'} that had not learned them`,
};
const withAgreement = fitWithLayouts(
  fitted.map((c) => agreementFeatures(c.evidence!)),
  outcomes,
);
await writeFile(output, `${JSON.stringify(calibration, null, 2)}\n`);
console.log(
  `wrote ${output}: slope ${calibration.slope.toFixed(3)}, weakestDigitSlope ${calibration.weakestDigitSlope.toFixed(3)}, ` +
    `intercepts ${Object.entries(layoutIntercepts)
      .map(([layout, intercept]) => `${layout} ${intercept.toFixed(3)}`)
      .join(', ')}; ${calibration.fittedOn}`,
);
console.log(
  `compared, with agreement: product logit ${withAgreement.weights[0]!.toFixed(3)}, weakest digit logit ${withAgreement.weights[1]!.toFixed(3)}, ` +
    AGREEMENTS.map((name, i) => `log ${name} ${withAgreement.weights[i + 2]!.toFixed(3)}`).join(', ') +
    `, intercept ${withAgreement.bias.toFixed(3)}` +
    otherLayouts
      .map(
        (layout, i) =>
          ` (${layout} ${(withAgreement.bias + withAgreement.weights.at(i - otherLayouts.length)!).toFixed(3)})`,
      )
      .join(''),
);

/** The confidences judged, each a calibration of the evidence; the first is the one written. */
const judged: Array<{ name: string; confidence: (evidence: ConfidenceEvidence) => number }> = [
  { name: 'calibrated', confidence: (evidence) => calibrate(evidence, calibration) },
  ...(values['judge-with'] ? [judgedWith(values['judge-with'])] : []),
  {
    name: 'calibrated with agreement (compared)',
    confidence: (evidence) => 100 * predictLogistic(withAgreement, agreementFeatures(evidence)),
  },
];

// Where the calibration photos say the readings kept local are right (ESCALATE_BELOW's default is chosen there) ...
for (const dataset of DATASETS)
  judge(
    `${dataset} calibration photos`,
    calibrationPhotos.filter((c) => c.dataset === dataset),
  );
const toloka = calibrationPhotos.filter((c) => c.dataset === 'toloka');
for (const { name, confidence } of judged) {
  console.log(
    `ESCALATE_BELOW, ${name}: ${escalationRule(lowestConfidenceKeptExact(withConfidence(toloka, confidence)))}`,
  );
}
console.log(crossValidatedRules());
// ... and how the validation split, read by the set, bears it out.
const validation = await readSplit('val', set, values.cache);
for (const dataset of DATASETS)
  judge(
    `${dataset} validation`,
    validation.filter((c) => c.dataset === dataset),
  );

/**
 * The photos' Brier score, selective accuracy and reliability table, with the product and with each judged confidence.
 */
function judge(title: string, photos: EvidenceCase[]): void {
  console.log(`${title}, product: ${confidenceReport(photos, (evidence) => evidence.product)}`);
  for (const { name, confidence } of judged) console.log(`${title}, ${name}: ${confidenceReport(photos, confidence)}`);
}

/** Another calibration (the one shipped before this fit, say) judged on the same readings beside the fit. */
function judgedWith(file: string): (typeof judged)[number] {
  const other = parseCalibration(readFileSync(file, 'utf8'), file);
  return { name: `calibrated as ${path.basename(file)}`, confidence: (evidence) => calibrate(evidence, other) };
}

/**
 * The compared calibration's features: the calibration's own and each agreement share's floored logarithm, then the
 * layouts'.
 */
function agreementFeatures(evidence: ConfidenceEvidence): number[] {
  return withLayouts(
    [
      ...calibrationFeatures(evidence),
      ...AGREEMENTS.map((name) => Math.log(Math.max(AGREEMENT_FLOOR, evidence[name]))),
    ],
    evidence,
  );
}

/** The distinct values, the commonest first (the first seen on a tie). */
function commonestFirst(values: string[]): string[] {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).map(([value]) => value);
}

function escalationRule(lowest: SelectiveAccuracy | undefined): string {
  return lowest
    ? `from ${lowest.threshold} up, at least ${100 * KEPT_EXACT}% of the toloka calibration photos kept local are exact ` +
        `(at ${lowest.threshold}: ${percent(lowest.accuracy)} of ${percent(lowest.coverage)})`
    : `no confidence keeps ${100 * KEPT_EXACT}% of the toloka calibration photos kept local exact`;
}

/**
 * The lowest whole confidence from which up every threshold keeps at least KEPT_EXACT of the photos' calibrated
 * readings exact, with its accuracy and coverage there; none when even 99 does not.
 */
function lowestConfidenceKeptExact(calibrated: ScoredCase[]): SelectiveAccuracy | undefined {
  let lowest;
  for (let threshold = 99; threshold > 0; threshold--) {
    const kept = selectiveAccuracy(calibrated, threshold);
    if (kept.accuracy === null) continue;
    if (kept.accuracy < KEPT_EXACT) break;
    lowest = kept;
  }
  return lowest;
}

/**
 * The ESCALATE_BELOW rule judged out of sample: the calibration fitted as above on nine tenths of the calibration
 * photos judges the tenth left out (CROSS_VALIDATION_FOLDS), for each of CROSS_VALIDATION_SEEDS' deals of the photos,
 * and the rule taken on Toloka's photos and on both datasets' together, with the log loss of the confidences so judged.
 * Beside it, the same for one intercept for every layout, on the same deals: what the intercept a layout buys.
 */
function crossValidatedRules(): string {
  const oneIntercept = crossValidated(
    fitted.map((c) => calibrationFeatures(c.evidence!)),
    (rows, rowOutcomes) => fitLogisticNonNegative(rows, rowOutcomes, L2_PENALTY),
  );
  return (
    `ESCALATE_BELOW, calibrated, cross-validated (${CROSS_VALIDATION_FOLDS} folds, deals ${CROSS_VALIDATION_SEEDS.join(', ')}): ` +
    `${crossValidated(features, fitWithLayouts)}\n  with one intercept for every layout: ${oneIntercept}`
  );
}

function crossValidated(
  rowFeatures: number[][],
  fit: (rows: number[][], rowOutcomes: number[]) => { weights: number[]; bias: number },
): string {
  const rules = CROSS_VALIDATION_SEEDS.map((seed) => {
    const probabilities = outOfFoldProbabilities(rowFeatures, outcomes, fit, CROSS_VALIDATION_FOLDS, seed);
    const calibrated = fitted.map((c, i) => ({ ...c, confidence: Math.round(100 * probabilities[i]!) }));
    const chanceOfOutcome = outcomes.map((outcome, i) =>
      Math.min(1 - 1e-6, Math.max(1e-6, outcome ? probabilities[i]! : 1 - probabilities[i]!)),
    );
    const logLoss = -chanceOfOutcome.reduce((sum, chance) => sum + Math.log(chance), 0) / outcomes.length;
    const threshold = (photos: ScoredCase[]) => lowestConfidenceKeptExact(photos)?.threshold ?? 'none';
    return {
      toloka: threshold(calibrated.filter((c) => c.dataset === 'toloka')),
      both: threshold(calibrated),
      logLoss: logLoss.toFixed(3),
    };
  });
  const list = (key: keyof (typeof rules)[number]) => rules.map((rule) => rule[key]).join(', ');
  return `from ${list('toloka')} up on the toloka calibration photos, from ${list('both')} up on both datasets' together; log loss ${list('logLoss')}`;
}
