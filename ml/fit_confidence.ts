/**
 * Measures a confidence lowered by disagreement (MODEL_CARD.md, "Confidence"):
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
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { loadFileList, loadLabelledPhotos } from '../src/eval/dataset.ts';
import { isExact, summarise, type ScoredCase } from '../src/eval/metrics.ts';
import { formatReliability, readPhotos } from '../src/eval/run.ts';
import { createLocalReader } from '../src/readers/local.ts';
import type { ConfidenceEvidence } from '../src/readers/local/confidence.ts';
import type { MeterReader } from '../src/readers/reader.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '..');
const SHARED_DATASETS = path.resolve(REPO_ROOT, '..', 'shared', 'datasets');
const DATASETS = ['toloka', 'bdci2020'];
/** The agreements weighed (readersAgreeing is reported but left out: the wheel reader outvotes the strip readers on the red wheels by design). */
const AGREEMENTS = ['candidatesAgreeing', 'layoutsAgreeing'] as const;
const AGREEMENT_FLOOR = 0.05;
const PRODUCT_FLOOR = 1e-4;
/** L2 penalty on the weights (not the bias): a handful of misreads must not drive a weight to infinity. */
const L2_PENALTY = 0.01;

type Split = 'training' | 'validation';
type EvidenceCase = ScoredCase & { dataset: string; evidence?: ConfidenceEvidence };

const { values } = parseArgs({ options: { cache: { type: 'string' } } });
if (!existsSync(SHARED_DATASETS)) {
  console.log(`skipped: no datasets at ${SHARED_DATASETS}`);
  process.exit(0);
}
let reader: MeterReader | undefined;
const training = await cases('training');
const validation = await cases('validation');

const read = training.filter((c) => c.evidence);
const { weights } = fitLogistic(
  read.map((c) => logEvidence(c.evidence!)),
  read.map((c) => (isExact(c) ? 1 : 0)),
);
const exponents = weights.slice(1).map((weight) => Math.max(0, weight / weights[0]!));
console.log(
  `fitted on ${read.length} training photos read (${read.filter(isExact).length} exactly): exponents ` +
    AGREEMENTS.map((name, i) => `${name} ${exponents[i]!.toFixed(2)}`).join(', '),
);
for (const dataset of DATASETS) {
  const photos = validation.filter((c) => c.dataset === dataset);
  for (const [name, confidence] of [
    ['product', (c: EvidenceCase) => c.confidence],
    ['penalised', penalised],
  ] as const) {
    const summary = summarise(photos.map((c) => ({ ...c, confidence: c.evidence ? Math.round(confidence(c)) : 0 })));
    const selective = summary.selective.map((s) => `≥ ${s.threshold}: ${percent(s.accuracy)} of ${percent(s.coverage)}`).join(', ');
    console.log(`${dataset} validation, ${name}: ${selective}\n${formatReliability(summary.reliability)}`);
  }
}

function penalised(c: EvidenceCase): number {
  return AGREEMENTS.reduce((confidence, name, i) => confidence * agreementShare(c.evidence!, name) ** exponents[i]!, c.evidence!.product);
}

function logEvidence(evidence: ConfidenceEvidence): number[] {
  return [Math.log(Math.max(evidence.product / 100, PRODUCT_FLOOR)), ...AGREEMENTS.map((name) => Math.log(agreementShare(evidence, name)))];
}

function agreementShare(evidence: ConfidenceEvidence, name: (typeof AGREEMENTS)[number]): number {
  return Math.max(AGREEMENT_FLOOR, evidence[name]);
}

function percent(value: number | null): string {
  return value === null ? 'n/a' : `${(100 * value).toFixed(1)}%`;
}

/** The split's photos of every dataset, read by the local reader (or from the cache). */
async function cases(split: Split): Promise<EvidenceCase[]> {
  const cacheFile = values.cache && path.join(values.cache, `${split}.json`);
  if (cacheFile && existsSync(cacheFile)) return JSON.parse(await readFile(cacheFile, 'utf8')) as EvidenceCase[];
  reader ??= await createLocalReader(loadConfig());
  if (!reader) throw new Error('the local reader is not available (no model weights?)');
  const config = loadConfig();
  const all: EvidenceCase[] = [];
  for (const dataset of DATASETS) {
    const dir = path.join(SHARED_DATASETS, dataset);
    const listed = await loadFileList(path.join(REPO_ROOT, 'ml', 'splits', `${dataset}-val.txt`));
    const photos = (await loadLabelledPhotos(dir)).filter((photo) => listed.has(photo.file) === (split === 'validation'));
    const scored = await readPhotos(reader, dir, photos, { maxPixels: config.maxImagePixels, longSide: config.normalisedLongSide });
    all.push(...scored.map(({ raw, ...c }) => ({ ...c, dataset, evidence: (raw as { evidence?: ConfidenceEvidence } | undefined)?.evidence })));
  }
  if (cacheFile) {
    await mkdir(values.cache!, { recursive: true });
    await writeFile(cacheFile, JSON.stringify(all));
  }
  return all;
}

/** Logistic regression by Newton's method (a few features, a few hundred photos: exact and fast). */
function fitLogistic(features: number[][], outcomes: number[]): { weights: number[]; bias: number } {
  const size = features[0]!.length + 1;
  const rows = features.map((row) => [...row, 1]);
  let coefficients = new Array<number>(size).fill(0);
  for (let iteration = 0; iteration < 50; iteration++) {
    const gradient = new Array<number>(size).fill(0);
    const hessian = Array.from({ length: size }, () => new Array<number>(size).fill(0));
    rows.forEach((row, r) => {
      const p = logistic(dot(coefficients, row));
      for (let i = 0; i < size; i++) {
        gradient[i]! += (p - outcomes[r]!) * row[i]!;
        for (let j = 0; j < size; j++) hessian[i]![j]! += p * (1 - p) * row[i]! * row[j]!;
      }
    });
    for (let i = 0; i < size - 1; i++) {
      gradient[i]! += L2_PENALTY * coefficients[i]!;
      hessian[i]![i]! += L2_PENALTY;
    }
    const step = solve(hessian, gradient);
    coefficients = coefficients.map((value, i) => value - step[i]!);
    if (Math.max(...step.map(Math.abs)) < 1e-9) break;
  }
  return { weights: coefficients.slice(0, -1), bias: coefficients.at(-1)! };
}

/** Solves `matrix · x = vector` by Gaussian elimination with partial pivoting. */
function solve(matrix: number[][], vector: number[]): number[] {
  const n = vector.length;
  const rows = matrix.map((row, i) => [...row, vector[i]!]);
  for (let column = 0; column < n; column++) {
    let pivot = column;
    for (let r = column + 1; r < n; r++) if (Math.abs(rows[r]![column]!) > Math.abs(rows[pivot]![column]!)) pivot = r;
    [rows[column], rows[pivot]] = [rows[pivot]!, rows[column]!];
    for (let r = 0; r < n; r++) {
      if (r === column) continue;
      const factor = rows[r]![column]! / rows[column]![column]!;
      for (let c = column; c <= n; c++) rows[r]![c]! -= factor * rows[column]![c]!;
    }
  }
  return rows.map((row, i) => row[n]! / row[i]!);
}

function logistic(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

function dot(a: number[], b: number[]): number {
  return a.reduce((sum, value, i) => sum + value * b[i]!, 0);
}
