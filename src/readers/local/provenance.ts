import { parseJsonFile, readSetFile } from './json-file.ts';

/**
 * `provenance.json` beside a set of weights: which datasets each file learned from, and their licences.
 * Weights may be used commercially only when every dataset behind every file allows it.
 */
export interface Provenance {
  set: string;
  datasets: Record<string, { name: string; licence: string; commercialUse: boolean }>;
  files: Record<string, string[]>;
}

export const PROVENANCE_FILE = 'provenance.json';

/** The licence line the service logs once for the weights it loads. */
export function describeWeights(modelDir: string): string {
  const provenance = readProvenance(modelDir);
  if (!provenance) return `weights in ${modelDir}: no ${PROVENANCE_FILE}, so their licence is unknown`;
  return licenceLine(provenance);
}

/** The name of the set of weights in `modelDir`, which the readings it makes record as their `model`. */
export function setName(modelDir: string): string | undefined {
  return readProvenance(modelDir)?.set;
}

/** The provenance.json in `modelDir`, if it has one. */
export function readProvenance(modelDir: string): Provenance | undefined {
  return readSetFile(modelDir, PROVENANCE_FILE, (text, file) => parseJsonFile(text, file) as Provenance);
}

export function licenceLine(provenance: Provenance): string {
  const used = new Set(Object.values(provenance.files).flat());
  const restricted = [...used].map((id) => provenance.datasets[id]).filter((dataset) => !dataset?.commercialUse);
  if (restricted.length === 0) return `weights ${provenance.set}: learned only from data that allows commercial use`;
  const sources = restricted.map((dataset) =>
    dataset ? `${dataset.name} (${dataset.licence})` : 'a dataset provenance.json does not describe',
  );
  return `weights ${provenance.set}: NOT for commercial use, learned from ${sources.join('; ')}`;
}
