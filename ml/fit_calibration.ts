/**
 * Fits the local reader's calibration (src/readers/local/confidence.ts) and judges it (MODEL_CARD.md, "Confidence"):
 *
 *   node ml/fit_calibration.ts [--models DIR] [--output FILE] [--cache DIR]
 *
 * The calibration photos (ml/splits/<dataset>-calibration.txt: every fourth training photo of each labels.csv, in
 * its order) are read with the weights in --models (default ml/calibrating): localisers, strip readers and wheel
 * reader trained as the shipped ones but without those photos (`sh ml/train.sh calibration` trains them so, with
 * `--leave-out`). Platt scaling, a logistic regression of "the reading is exact" on the logit of the confidence
 * product, is fitted on the photos read and written to --output (default models/calibration.json). Then the
 * calibration photos, and the validation split read with the shipped weights (models/), are judged with the product
 * and with the calibration: Brier score, selective accuracy and the reliability table. Beside them, not written: a
 * calibration fitted alike that also weighs how far the photo's other readings agree (AGREEMENTS), measured here
 * before the reader uses it (issue #15, "test-time agreement as confidence"). `--cache DIR` keeps the readings in DIR
 * and reuses them.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SHARED_DATASETS } from '../src/eval/dataset.ts';
import { isExact, selectiveAccuracy, type SelectiveAccuracy } from '../src/eval/metrics.ts';
import { CALIBRATION_FILE, calibrate, productLogit, type Calibration, type ConfidenceEvidence } from '../src/readers/local/confidence.ts';
import { MODEL_FILES } from '../src/readers/local/pipeline.ts';
import { WHEEL_READER_FILE } from '../src/readers/local/spec.ts';
import { fitLogistic, logistic } from './logistic.ts';
import { CALIBRATING_MODELS, DATASETS, SHIPPED_MODELS, confidenceReport, percent, readSplit, type EvidenceCase } from './read_splits.ts';

/** The share of the readings kept local (at or above ESCALATE_BELOW) that should be exact (issue #15). */
const KEPT_EXACT = 0.99;
/** The agreement shares (`raw.evidence`) the compared calibration weighs: the logarithm of each, floored, is a feature. */
const AGREEMENTS = ['readersAgreeing', 'candidatesAgreeing', 'layoutsAgreeing'] as const;
const AGREEMENT_FLOOR = 0.05;
/** L2 penalty on its weights: a handful of misreads with one disagreement must not drive a weight to infinity. */
const L2_PENALTY = 0.01;

const { values } = parseArgs({
  options: { models: { type: 'string' }, output: { type: 'string' }, cache: { type: 'string' } },
});
if (!existsSync(SHARED_DATASETS)) {
  console.log(`skipped: no datasets at ${SHARED_DATASETS}`);
  process.exit(0);
}

const models = path.resolve(values.models ?? CALIBRATING_MODELS);
// Without its wheel reader the local reader still reads (the strip readers alone): a fit on that would be wrong.
const missing = [...MODEL_FILES, WHEEL_READER_FILE].filter((file) => !existsSync(path.join(models, file)));
if (missing.length > 0) {
  console.error(`no calibration fitted: ${models} lacks ${missing.join(', ')} (sh ml/train.sh calibration trains what is missing)`);
  process.exit(1);
}
const calibrationPhotos = await readSplit('calibration', models, values.cache);
const fitted = calibrationPhotos.filter((c) => c.evidence);
const exact = fitted.filter(isExact).length;
if (exact === 0 || exact === fitted.length) {
  // A logistic fit needs right and wrong readings both (weights trained with a small share of their steps read none).
  console.error(`no calibration fitted: ${fitted.length} calibration photos read, ${exact} exactly; it needs right and wrong readings both`);
  process.exit(1);
}
const outcomes = fitted.map((c) => (isExact(c) ? 1 : 0));
const { weights, bias } = fitLogistic(
  fitted.map((c) => [productLogit(c.evidence!.product)]),
  outcomes,
);
const calibration: Calibration = {
  slope: weights[0]!,
  intercept: bias,
  fittedOn:
    `${fitted.length} calibration photos read (ml/splits/*-calibration.txt, ${exact} exactly) by ` +
    'localisers, strip readers and a wheel reader that had not learned them',
};
const withAgreement = fitWithAgreement(
  fitted.map((c) => agreementFeatures(c.evidence!)),
  outcomes,
);
const calibrated = (evidence: ConfidenceEvidence) => calibrate(evidence.product, calibration);
const calibratedWithAgreement = (evidence: ConfidenceEvidence) =>
  100 * logistic(agreementFeatures(evidence).reduce((sum, feature, i) => sum + feature * withAgreement.weights[i]!, withAgreement.bias));
const output = values.output ?? path.join(SHIPPED_MODELS, CALIBRATION_FILE);
await writeFile(output, `${JSON.stringify(calibration, null, 2)}\n`);
console.log(`wrote ${output}: slope ${calibration.slope.toFixed(3)}, intercept ${calibration.intercept.toFixed(3)}; ${calibration.fittedOn}`);
console.log(
  `compared, with agreement: product logit ${withAgreement.weights[0]!.toFixed(3)}, ` +
    AGREEMENTS.map((name, i) => `log ${name} ${withAgreement.weights[i + 1]!.toFixed(3)}`).join(', ') +
    `, intercept ${withAgreement.bias.toFixed(3)}`,
);

// Where the calibration photos say the readings kept local are right (ESCALATE_BELOW's default is chosen there) ...
for (const dataset of DATASETS)
  judge(
    `${dataset} calibration photos`,
    calibrationPhotos.filter((c) => c.dataset === dataset),
  );
const toloka = calibrationPhotos.filter((c) => c.dataset === 'toloka');
console.log(`ESCALATE_BELOW: ${escalationRule(lowestConfidenceKeptExact(toloka, calibrated))}`);
console.log(`ESCALATE_BELOW with agreement (compared): ${escalationRule(lowestConfidenceKeptExact(toloka, calibratedWithAgreement))}`);
// ... and how the validation split, read by the shipped weights, bears it out.
const validation = await readSplit('val', SHIPPED_MODELS, values.cache);
for (const dataset of DATASETS)
  judge(
    `${dataset} validation`,
    validation.filter((c) => c.dataset === dataset),
  );

/** The photos' Brier score, selective accuracy and reliability table, with the product and with the calibration. */
function judge(title: string, photos: EvidenceCase[]): void {
  console.log(`${title}, product: ${confidenceReport(photos, (evidence) => evidence.product)}`);
  console.log(`${title}, calibrated: ${confidenceReport(photos, calibrated)}`);
  console.log(`${title}, calibrated with agreement (compared): ${confidenceReport(photos, calibratedWithAgreement)}`);
}

/** The compared calibration's features: the product's logit and each agreement share's floored logarithm. */
function agreementFeatures(evidence: ConfidenceEvidence): number[] {
  return [productLogit(evidence.product), ...AGREEMENTS.map((name) => Math.log(Math.max(AGREEMENT_FLOOR, evidence[name])))];
}

/**
 * The logistic fit on agreementFeatures with no agreement weighed below 0: a disagreement never makes a reading surer.
 * An agreement fitted below 0 is zeroed in every row and the fit run again: with L2_PENALTY its weight comes out 0.
 */
function fitWithAgreement(features: number[][], outcomes: number[]): { weights: number[]; bias: number } {
  const zeroed = new Set<number>();
  for (;;) {
    const fit = fitLogistic(
      features.map((row) => row.map((feature, i) => (zeroed.has(i) ? 0 : feature))),
      outcomes,
      L2_PENALTY,
    );
    const negative = fit.weights.flatMap((weight, i) => (i > 0 && weight < 0 ? [i] : []));
    if (negative.length === 0) return fit;
    for (const i of negative) zeroed.add(i);
  }
}

function escalationRule(lowest: SelectiveAccuracy | undefined): string {
  return lowest
    ? `from ${lowest.threshold} up, at least ${100 * KEPT_EXACT}% of the toloka calibration photos kept local are exact ` +
        `(at ${lowest.threshold}: ${percent(lowest.accuracy)} of ${percent(lowest.coverage)})`
    : `no confidence keeps ${100 * KEPT_EXACT}% of the toloka calibration photos kept local exact`;
}

/**
 * The lowest whole confidence from which up every threshold keeps at least KEPT_EXACT of the photos' calibrated
 * readings exact (Toloka's, the harder counters issue #15 sets its bar on), with its accuracy and coverage there;
 * none when even 99 does not.
 */
function lowestConfidenceKeptExact(photos: EvidenceCase[], confidence: (evidence: ConfidenceEvidence) => number): SelectiveAccuracy | undefined {
  const calibrated = photos.map((c) => ({ ...c, confidence: c.evidence ? Math.round(confidence(c.evidence)) : 0 }));
  let lowest;
  for (let threshold = 99; threshold > 0; threshold--) {
    const kept = selectiveAccuracy(calibrated, threshold);
    if (kept.accuracy === null) continue;
    if (kept.accuracy < KEPT_EXACT) break;
    lowest = kept;
  }
  return lowest;
}
