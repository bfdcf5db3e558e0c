import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DomainError } from '../errors.ts';
import { PROVENANCE_FILE, type Provenance, readProvenance } from '../readers/local/provenance.ts';
import { LOCALISER_FILES, READER_FILES } from '../readers/local/spec.ts';

/**
 * A network `meterlens train` fine-tunes: its ONNX file in a set of weights, the script of ml/ (with its leading
 * arguments and options) that trains it as the set's recipe did, and the file of the base set it starts from.
 */
export interface FineTune {
  file: string;
  command: string[];
  /** Its PyTorch checkpoint, or the ONNX file itself where the network is a fine-tune of PP-OCRv4's. */
  init: string;
}

/** How a set's provenance.json names the pretrained networks of PP-OCRv4 that the default set's networks are built on. */
const PPOCR_RECOGNISER = 'ppocrv4';
const PPOCR_DETECTOR = 'ppocrv4-det';

/** The recipe's readers differ by regularisation and sequence layer, which their checkpoints must match (ml/train.sh). */
const READER_OPTIONS = [
  ['--regularisation', 'light', '--sequence', 'gru'],
  ['--regularisation', 'strong', '--sequence', 'gru'],
  ['--regularisation', 'strong', '--sequence', 'conv'],
];

/**
 * The networks of the set in `baseDir` and how each is fine-tuned. A network its provenance.json says is built on
 * PP-OCRv4's detector or recogniser (the default set's) is run by ml/paddle_graph.py, which starts from the ONNX file
 * itself; a localiser learns after the node the default set's localisers learned after, a strip reader after its
 * backbone's last stage, whatever depth the set's recipe trained: the fleet loop was measured so, and a few hundred
 * photos in bounded time are fewer steps than the recipe's. The others start from their checkpoints, as ml/train.sh
 * trains them (localiser 2 as localiser 1 with another seed).
 */
export function fineTunesOf(baseDir: string): FineTune[] {
  const learnedFrom = readProvenance(baseDir)?.files ?? {};
  const builtOn = (file: string, pretrained: string) => learnedFrom[file]?.includes(pretrained) ?? false;
  return [
    ...LOCALISER_FILES.map((file, index) => {
      const seed = ['--seed', String(index + 1)];
      return builtOn(file, PPOCR_DETECTOR)
        ? { file, command: ['train_localiser.py', '--detector', '--train-after', 'p2o.Add.147', ...seed], init: file }
        : { file, command: ['train_localiser.py', ...seed], init: checkpointOf(file) };
    }),
    ...READER_FILES.map((file, index) =>
      builtOn(file, PPOCR_RECOGNISER)
        ? {
            file,
            command: ['ppocr_reader.py', 'train', '--train-after', 'p2o.Add.199', '--seed', String(index + 1)],
            init: file,
          }
        : { file, command: ['train_reader.py', '--seed', '1', ...READER_OPTIONS[index]!], init: checkpointOf(file) },
    ),
  ];
}

/** The PyTorch checkpoint a set may carry beside an ONNX file (`localiser-1.pt`): what a fine-tune starts from. */
export function checkpointOf(file: string): string {
  return file.replace(/\.onnx$/, '.pt');
}

/** Whether the fine-tune starts from a PyTorch checkpoint beside the ONNX file (not from the ONNX file itself). */
export function startsFromCheckpoint(fineTune: FineTune): boolean {
  return fineTune.init !== fineTune.file;
}

/** Stops, in one line, when the set in `dir` lacks a file a fine-tune of `fineTunes` starts from. */
export function requireCheckpoints(dir: string, fineTunes: FineTune[]): void {
  const missing = fineTunes.filter((fineTune) => !existsSync(path.join(dir, fineTune.init)));
  if (missing.length === 0) return;
  const checkpoints = fineTunes.filter(startsFromCheckpoint);
  const which =
    missing.length === checkpoints.length && missing.every(startsFromCheckpoint)
      ? 'no PyTorch checkpoints beside their ONNX files'
      : `no ${missing.map((fineTune) => fineTune.init).join(', ')}`;
  throw new DomainError(
    'refused',
    'base',
    `the weights in ${dir} carry ${which}, and a fine-tune starts from them: ` +
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
  for (const file of [...LOCALISER_FILES, ...READER_FILES]) {
    const extra = READER_FILES.includes(file) ? [DIGITS_CLEAN, OWN_PHOTOS] : [OWN_PHOTOS];
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
