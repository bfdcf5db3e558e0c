import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { DomainError } from '../errors.ts';
import { SHARED_DATASETS, loadFileList } from '../eval/dataset.ts';
import { PROVENANCE_FILE } from '../readers/local/provenance.ts';
import { WHEEL_READER_FILE } from '../readers/local/spec.ts';
import {
  TRAINING_FILE,
  candidateProvenance,
  checkpointOf,
  fineTunesOf,
  requireCheckpoints,
  startsFromCheckpoint,
  writeJson,
  type Training,
} from './weights.ts';

const ML_DIR = path.resolve(import.meta.dirname, '..', '..', 'ml');

/** The Python the training scripts run with: Debian's, with the packages of ml/requirements-debian.txt. */
export const DEFAULT_PYTHON = '/usr/bin/python3';

export interface FineTuneOptions {
  /** The set of weights to start from: ONNX files with their checkpoints. */
  base: string;
  /** A folder of labelled photos: labels.csv (`file,reading,quad`) and the photos it names. */
  photos: string;
  /** Where the validation list and the candidate set go. */
  work: string;
  /** The networks' training time, shared equally by them (loading, judging and exporting each come on top). */
  minutes: number;
  python: string;
}

export interface FineTuneResult {
  candidate: string;
  trainedOn: number;
  heldBack: number;
  minutes: number;
}

/**
 * Checks the base set's checkpoints and the Python, then has `gather` write the photos' folder (the database's
 * export, say), then fine-tunes every network of the base set (fineTunesOf) on them, one after another through Python,
 * each for an equal share of the training time, its progress lines passed to `log`; writes the candidate set
 * (`<work>/candidate`): the networks' ONNX files and the checkpoints a next fine-tune starts from, the wheel reader copied unchanged when the base
 * has one, provenance.json and training.json. The base's calibration and rolling rule are left behind: they were
 * fitted to and chosen for the base's networks, so the candidate's confidence is the readers' product, and its last
 * wheel reads as its readers learned from the operator's photos.
 */
export async function fineTune(
  options: FineTuneOptions,
  log: (line: string) => void,
  gather: () => Promise<void> = async () => {},
): Promise<FineTuneResult> {
  const fineTunes = fineTunesOf(options.base);
  requireCheckpoints(options.base, fineTunes);
  const env = trainingEnvironment(options);
  await checkPython(options.python, env);
  await gather();
  await runPython(options.python, ['make_split.py'], env, (line) => log(`split: ${line}`));
  const { training, heldBack } = await splitPhotos(options.photos, env.METERLENS_SPLITS!);
  if (training.length === 0 || heldBack.length === 0) {
    throw new DomainError(
      'refused',
      'photos',
      `${training.length + heldBack.length} labelled photos with a counter box in ${options.photos}, ${heldBack.length} of them held back: ` +
        'too few to learn from and to judge by (confirm or correct more readings)',
    );
  }
  log(`${training.length} photos to learn from, ${heldBack.length} held back to judge by`);

  const candidate = path.join(options.work, 'candidate');
  await mkdir(candidate, { recursive: true });
  const started = Date.now();
  // Each network trains for an equal share; loading its photos, judging and exporting it come on top, so that the
  // last network's share is not spent by the others' (about 45 s for a PP-OCRv4 network and 400 photos here).
  const minutes = options.minutes / fineTunes.length;
  for (const fineTune of fineTunes) {
    const { file, command, init } = fineTune;
    // A checkpoint goes beside the ONNX file only where the next fine-tune starts from it.
    const checkpointDir = startsFromCheckpoint(fineTune) ? candidate : options.work;
    const args = [
      ...command,
      '--init',
      path.join(options.base, init),
      '--output',
      path.join(candidate, file),
      '--checkpoint',
      path.join(checkpointDir, checkpointOf(file)),
      '--minutes',
      minutes.toFixed(3),
    ];
    log(`${file}: fine-tuning for ${minutes.toFixed(1)} minutes`);
    await runPython(options.python, args, env, (line) => log(`${file}: ${line}`));
  }
  const copied = existsSync(path.join(options.base, WHEEL_READER_FILE)) ? [WHEEL_READER_FILE] : [];
  for (const file of copied) await copyFile(path.join(options.base, file), path.join(candidate, file));
  await writeJson(
    path.join(candidate, PROVENANCE_FILE),
    await candidateProvenance(options.base, options.photos, copied),
  );
  const elapsedMinutes = (Date.now() - started) / 60_000;
  const written: Training = {
    base: options.base,
    photos: options.photos,
    heldBack,
    trainedOn: training.length,
    minutes: Math.round(elapsedMinutes * 10) / 10,
    finishedAt: new Date().toISOString(),
  };
  await writeJson(path.join(candidate, TRAINING_FILE), written);
  return { candidate, trainedOn: written.trainedOn, heldBack: heldBack.length, minutes: written.minutes };
}

/**
 * What the training scripts read (ml/README.md): the photos' folder as the one training dataset, the validation
 * list kept in the work folder, digits-clean's crops for the synthetic strips. The operator's own settings of
 * METERLENS_DIGITS_CLEAN, METERLENS_CACHE, TORCH_THREADS and PYTHONWARNINGS are kept.
 */
function trainingEnvironment(options: FineTuneOptions): NodeJS.ProcessEnv {
  return {
    METERLENS_DIGITS_CLEAN: path.join(SHARED_DATASETS, 'digits-clean'),
    TORCH_THREADS: String(availableParallelism()),
    // The ONNX exporter's notes on every export, about what the shipped models are too: noise among the progress lines.
    PYTHONWARNINGS: 'ignore:The shape inference of prim,ignore:Exporting a model to ONNX with a batch_size',
    ...process.env,
    METERLENS_DATASETS: path.dirname(options.photos),
    METERLENS_TRAIN_DATASETS: path.basename(options.photos),
    METERLENS_SPLITS: path.join(options.work, 'splits'),
    METERLENS_DIGITS: 'clean',
  };
}

/** Stops, in one line, when `python` is not there or cannot train (ml/can_fine_tune.py says what is missing). */
async function checkPython(python: string, env: NodeJS.ProcessEnv): Promise<void> {
  const lines: string[] = [];
  try {
    await runPython(python, ['can_fine_tune.py'], env, (line) => lines.push(line));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new DomainError(
        'unavailable',
        'python',
        `no ${python}: training needs Python 3 with the packages of ml/requirements-debian.txt (apt-get install -y python3 $(cat ml/requirements-debian.txt))`,
      );
    }
    throw new DomainError('unavailable', 'python', lines.at(-1) ?? (error as Error).message);
  }
}

/**
 * Runs `python` on a script of ml/, each line it prints (stdout and stderr) given to `line`; rejects unless it exits 0.
 */
function runPython(
  python: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  line: (text: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, args, { cwd: ML_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const closed = [child.stdout, child.stderr].map((stream) => {
      const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
      lines.on('line', line);
      return new Promise((done) => lines.once('close', done));
    });
    child.once('error', reject);
    child.once('close', async (code, signal) => {
      await Promise.all(closed);
      if (code === 0) resolve();
      else
        reject(
          new DomainError(
            'unavailable',
            'training',
            `${python} ml/${args[0]} stopped (${signal ?? `exit code ${code}`}); its output is above`,
          ),
        );
    });
  });
}

/**
 * The photos of labels.csv with a counter box (what the networks learn from: ml/common.py leaves the others out), as
 * the validation list make_split.py wrote splits them.
 */
async function splitPhotos(photos: string, splits: string): Promise<{ training: string[]; heldBack: string[] }> {
  const held = await loadFileList(path.join(splits, `${path.basename(photos)}-val.txt`));
  const boxed = await photosWithBox(photos);
  return { training: boxed.filter((file) => !held.has(file)), heldBack: boxed.filter((file) => held.has(file)) };
}

async function photosWithBox(photos: string): Promise<string[]> {
  const [header, ...lines] = (await readFile(path.join(photos, 'labels.csv'), 'utf8'))
    .split(/\r?\n/)
    .filter((line) => line.trim());
  const columns = header!.split(',');
  const file = columns.indexOf('file');
  const quad = columns.indexOf('quad');
  return lines
    .map((line) => line.split(','))
    .flatMap((cells) => (quad >= 0 && cells[quad]?.trim() ? [cells[file]!.trim()] : []));
}
