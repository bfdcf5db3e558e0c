import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DomainError } from '../errors.ts';
import { PROVENANCE_FILE, type Provenance } from '../readers/local/provenance.ts';
import { LOCALISER_FILES, READER_FILES } from '../readers/local/spec.ts';

/**
 * A network `meterlens train` fine-tunes: its ONNX file in a set of weights, the training script, and the options
 * that build and train it as ml/train.sh does without Toloka (localiser 2 as localiser 1 with another seed; the
 * readers' regularisation and sequence layer, which their checkpoints must match).
 */
export interface FineTune {
  file: string;
  script: string;
  options: string[];
}

const READER_OPTIONS = [
  ['--regularisation', 'light', '--sequence', 'gru'],
  ['--regularisation', 'strong', '--sequence', 'gru'],
  ['--regularisation', 'strong', '--sequence', 'conv'],
];

export const FINE_TUNES: FineTune[] = [
  ...LOCALISER_FILES.map((file, index) => ({
    file,
    script: 'train_localiser.py',
    options: ['--seed', String(index + 1)],
  })),
  ...READER_FILES.map((file, index) => ({
    file,
    script: 'train_reader.py',
    options: ['--seed', '1', ...READER_OPTIONS[index]!],
  })),
];

/** The PyTorch checkpoint a set may carry beside an ONNX file (`localiser-1.pt`): what a fine-tune starts from. */
export function checkpointOf(file: string): string {
  return file.replace(/\.onnx$/, '.pt');
}

/** Stops, in one line, when the set in `dir` lacks a checkpoint a fine-tune starts from. */
export function requireCheckpoints(dir: string): void {
  const missing = FINE_TUNES.map((fineTune) => checkpointOf(fineTune.file)).filter(
    (file) => !existsSync(path.join(dir, file)),
  );
  if (missing.length === 0) return;
  const which = missing.length === FINE_TUNES.length ? 'no PyTorch checkpoints' : `no ${missing.join(', ')}`;
  throw new DomainError(
    'refused',
    'base',
    `the weights in ${dir} carry ${which} beside their ONNX files, and a fine-tune starts from them: ` +
      'give --base a set that has them (ml/train.sh trains one; ml/README.md, "Your own fleet")',
  );
}

/**
 * `training.json` in a candidate set: where the photos it learned from are and which of them it was judged on
 * (held back from training), so that `meterlens models promote` reads the same ones with both sets. Written last:
 * a folder without it is no finished candidate.
 */
export const TRAINING_FILE = 'training.json';

export interface Training {
  /** The set it was fine-tuned from. */
  base: string;
  /** The folder of labelled photos (labels.csv) it learned from. */
  photos: string;
  /** The photos of that folder held back to judge it: no network of it learned them. */
  heldBack: string[];
  trainedOn: number;
  minutes: number;
  finishedAt: string;
}

export async function readTraining(dir: string): Promise<Training> {
  const text = await readFile(path.join(dir, TRAINING_FILE), 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT')
      throw new DomainError(
        'not_found',
        'candidate',
        `${dir} is no finished candidate set: it has no ${TRAINING_FILE} (meterlens train writes one)`,
      );
    throw error;
  });
  return JSON.parse(text) as Training;
}

/** The operator's photos, as a dataset of a candidate's provenance. */
export const OWN_PHOTOS = 'own-photos';
/** The crops the strip readers' synthetic strips are made of in a fine-tune (METERLENS_DIGITS=clean). */
const DIGITS_CLEAN = 'digits-clean';
/** Stands for what a base set without provenance.json learned from. */
const UNKNOWN_BASE = 'base-unknown';

/**
 * The provenance of a set fine-tuned from the one in `baseDir` on the operator's own photos: the base set's, each
 * fine-tuned file also learned from those photos (and the readers from digits-clean's crops); files copied unchanged
 * keep theirs. A base set without provenance.json makes every file's licence unknown, so not for commercial use.
 */
export async function candidateProvenance(baseDir: string, photos: string, copied: string[]): Promise<Provenance> {
  const text = await readFile(path.join(baseDir, PROVENANCE_FILE), 'utf8').catch(() => undefined);
  const base: Provenance = text
    ? (JSON.parse(text) as Provenance)
    : {
        set: path.basename(baseDir),
        datasets: {
          [UNKNOWN_BASE]: {
            name: `the weights in ${baseDir}, which have no ${PROVENANCE_FILE}`,
            licence: 'unknown',
            commercialUse: false,
          },
        },
        files: {},
      };
  const learnedFrom = (file: string) => base.files[file] ?? (text ? [] : [UNKNOWN_BASE]);
  const files: Provenance['files'] = {};
  for (const { file, script } of FINE_TUNES) {
    const extra = script === 'train_reader.py' ? [DIGITS_CLEAN, OWN_PHOTOS] : [OWN_PHOTOS];
    files[file] = [...new Set([...learnedFrom(file), ...extra])];
  }
  for (const file of copied) files[file] = learnedFrom(file);
  return {
    set: `${base.set}+own-${new Date().toISOString().slice(0, 10)}`,
    datasets: {
      [DIGITS_CLEAN]: {
        name: 'digits-clean wheel crops (digits-clean/PROVENANCE.md)',
        licence: 'Apache-2.0 and MIT',
        commercialUse: true,
      },
      ...base.datasets,
      [OWN_PHOTOS]: {
        name: `the operator's own labelled photos (${photos})`,
        licence: "the operator's own",
        commercialUse: true,
      },
    },
    files,
  };
}

export async function writeJson(file: string, value: unknown): Promise<void> {
  await writeFile(file, `${JSON.stringify(value, null, 2)}\n`);
}
