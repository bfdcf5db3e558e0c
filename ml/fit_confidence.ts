/**
 * Measures a confidence lowered by disagreement (ml/EXPERIMENTS.md, "Confidence on the training photos (v6)"), with
 * models/noncommercial, which learned the training photos:
 *
 *   node ml/fit_confidence.ts [--cache DIR]
 *
 * The local reader reports beside each reading how far the photo's other readings agree with it (`raw.evidence`:
 * the other candidate windows' readings, their layouts and the strip readers' layouts, the strip readers' own
 * readings). On the training photos (those not in ml/splits/*-val.txt) a logistic regression of "the reading is
 * exact" on the logarithms of the confidence product and of each agreement share gives each agreement an exponent
 * (its weight over the product's): the penalised confidence is the product times every share raised to its
 * exponent. The fitted level (bias) is left out: the readers have learned these photos (98% read exactly). Then the
 * validation split judges the product and the penalised confidence side by side: selective accuracy and the
 * reliability table. `--cache DIR` keeps the readings in DIR and reuses them.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { NONCOMMERCIAL_MODEL_DIR } from '../src/config.ts';
import { SHARED_DATASETS } from '../src/eval/dataset.ts';
import { isExact } from '../src/eval/metrics.ts';
import type { ConfidenceEvidence } from '../src/readers/local/confidence.ts';
import { fitLogistic } from './logistic.ts';
import { DATASETS, confidenceReport, readSplit } from './read_splits.ts';

/**
 * The agreements weighed (readersAgreeing is reported but left out: the wheel reader outvotes the strip readers on the
 * red wheels by design).
 */
const AGREEMENTS = ['candidatesAgreeing', 'layoutsAgreeing'] as const;
const AGREEMENT_FLOOR = 0.05;
const PRODUCT_FLOOR = 1e-4;
/** L2 penalty on the weights (not the bias): a handful of misreads must not drive a weight to infinity. */
const L2_PENALTY = 0.01;

const { values } = parseArgs({ options: { cache: { type: 'string' } } });
if (!existsSync(SHARED_DATASETS)) {
  console.log(`skipped: no datasets at ${SHARED_DATASETS}`);
  process.exit(0);
}
const training = await readSplit('training', NONCOMMERCIAL_MODEL_DIR, values.cache);
const validation = await readSplit('val', NONCOMMERCIAL_MODEL_DIR, values.cache);

const read = training.filter((c) => c.evidence);
const { weights } = fitLogistic(
  read.map((c) => logEvidence(c.evidence!)),
  read.map((c) => (isExact(c) ? 1 : 0)),
  L2_PENALTY,
);
const exponents = weights.slice(1).map((weight) => Math.max(0, weight / weights[0]!));
console.log(
  `fitted on ${read.length} training photos read (${read.filter(isExact).length} exactly): exponents ` +
    AGREEMENTS.map((name, i) => `${name} ${exponents[i]!.toFixed(2)}`).join(', '),
);
for (const dataset of DATASETS) {
  const photos = validation.filter((c) => c.dataset === dataset);
  console.log(`${dataset} validation, product: ${confidenceReport(photos, (evidence) => evidence.product)}`);
  console.log(`${dataset} validation, penalised: ${confidenceReport(photos, penalised)}`);
}

function penalised(evidence: ConfidenceEvidence): number {
  return AGREEMENTS.reduce(
    (confidence, name, i) => confidence * agreementShare(evidence, name) ** exponents[i]!,
    evidence.product,
  );
}

function logEvidence(evidence: ConfidenceEvidence): number[] {
  return [
    Math.log(Math.max(evidence.product / 100, PRODUCT_FLOOR)),
    ...AGREEMENTS.map((name) => Math.log(agreementShare(evidence, name))),
  ];
}

function agreementShare(evidence: ConfidenceEvidence, name: (typeof AGREEMENTS)[number]): number {
  return Math.max(AGREEMENT_FLOOR, evidence[name]);
}
