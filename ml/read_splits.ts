/** The shipped datasets' photos of one split, read by the local reader: for the ml/ scripts that fit how sure it is. */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { SHARED_DATASETS, VALIDATION_SETS, loadFileList, loadLabelledPhotos } from '../src/eval/dataset.ts';
import { summarise, type ScoredCase } from '../src/eval/metrics.ts';
import { formatCalibration, formatReliability, readPhotos } from '../src/eval/run.ts';
import type { ConfidenceEvidence } from '../src/readers/local/confidence.ts';
import { createLocalReader } from '../src/readers/local.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '..');
/** The shipped datasets, each with its ml/splits lists. */
export const DATASETS = VALIDATION_SETS;

/**
 * A photo read, with its dataset and what the reader knows of how sure it is (`raw.evidence`; none without a reading).
 */
export type EvidenceCase = ScoredCase & { dataset: string; evidence?: ConfidenceEvidence };

/**
 * `training`: every photo not in ml/splits/<dataset>-val.txt; any other split: the photos
 * ml/splits/<dataset>-<split>.txt lists (`val`, `calibration`).
 */
export type Split = 'training' | 'val' | 'calibration';

/** The split's photos of every dataset read with the weights in `modelDir`; with `cacheDir`, kept there and reused. */
export async function readSplit(split: Split, modelDir: string, cacheDir?: string): Promise<EvidenceCase[]> {
  // Named by the weights too, so that one cache serves several sets.
  const cacheFile =
    cacheDir &&
    path.join(cacheDir, `${split}-${createHash('sha1').update(path.resolve(modelDir)).digest('hex').slice(0, 8)}.json`);
  if (cacheFile && existsSync(cacheFile)) return JSON.parse(await readFile(cacheFile, 'utf8')) as EvidenceCase[];
  const config = { ...loadConfig(), localModelDir: modelDir };
  const reader = await createLocalReader(config);
  if (!reader) throw new Error(`the local reader is not available (no model weights in ${modelDir}?)`);
  const all: EvidenceCase[] = [];
  for (const dataset of DATASETS) {
    const dir = path.join(SHARED_DATASETS, dataset);
    const listed = await loadFileList(
      path.join(REPO_ROOT, 'ml', 'splits', `${dataset}-${split === 'training' ? 'val' : split}.txt`),
    );
    const photos = (await loadLabelledPhotos(dir)).filter((photo) => listed.has(photo.file) === (split !== 'training'));
    const scored = await readPhotos(reader, dir, photos, {
      maxPixels: config.maxImagePixels,
      longSide: config.normalisedLongSide,
    });
    all.push(
      ...scored.map(({ raw, ...c }) => ({
        ...c,
        dataset,
        evidence: (raw as { evidence?: ConfidenceEvidence } | undefined)?.evidence,
      })),
    );
  }
  if (cacheFile) {
    await mkdir(cacheDir, { recursive: true });
    await writeFile(cacheFile, JSON.stringify(all));
  }
  return all;
}

/**
 * How well `confidence` (of a reading's evidence) tells right readings from wrong ones on these photos, as
 * `meterlens eval` reports it: the calibration scores, the selective accuracies and the reliability table.
 */
export function confidenceReport(photos: EvidenceCase[], confidence: (evidence: ConfidenceEvidence) => number): string {
  const summary = summarise(withConfidence(photos, confidence));
  const selective = summary.selective
    .map((s) => `≥ ${s.threshold}: ${percent(s.accuracy)} of ${percent(s.coverage)}`)
    .join(', ');
  return `${formatCalibration(summary.calibration)}; ${selective}\n${formatReliability(summary.reliability)}`;
}

/**
 * The photos with the confidence `confidence` gives their evidence, rounded as the reader reports it (0 without a
 * reading).
 */
export function withConfidence(
  photos: EvidenceCase[],
  confidence: (evidence: ConfidenceEvidence) => number,
): EvidenceCase[] {
  return photos.map((c) => ({ ...c, confidence: c.evidence ? Math.round(confidence(c.evidence)) : 0 }));
}

export function percent(value: number | null): string {
  return value === null ? 'n/a' : `${(100 * value).toFixed(1)}%`;
}
