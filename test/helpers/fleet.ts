import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NONCOMMERCIAL_MODEL_DIR } from '../../src/config.ts';
import { DEFAULT_PYTHON } from '../../src/fleet/fine-tune.ts';
import { fineTunesOf, startsFromCheckpoint, TRAINING_FILE, type Training } from '../../src/fleet/weights.ts';
import { drawMeter } from '../fakes/meter-photo.ts';

/**
 * A folder of labelled photos as `meterlens dataset export` writes one (labels.csv: file,reading,quad): a meter drawn
 * showing each reading (`WWWWW.FFF`; `shows`, when it is mislabelled), with the box of its counter unless `boxless`.
 */
export async function writeDrawnPhotos(
  dir: string,
  photos: Array<{ file: string; reading: string; shows?: string; boxless?: boolean }>,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const lines = ['file,reading,quad'];
  for (const { file, reading, shows, boxless } of photos) {
    const [whole = '', fraction = ''] = (shows ?? reading).split('.');
    const { image, counter } = await drawMeter(whole, fraction);
    await writeFile(path.join(dir, file), image);
    const [left, top, right, bottom] = [
      counter.left,
      counter.top,
      counter.left + counter.width,
      counter.top + counter.height,
    ];
    lines.push(`${file},${reading},${boxless ? '' : [left, top, right, top, right, bottom, left, bottom].join(' ')}`);
  }
  await writeFile(path.join(dir, 'labels.csv'), `${lines.join('\n')}\n`);
}

/** Empty files where a fine-tune of the set in `dir` starts from its checkpoints: enough for the checks before Python. */
export async function writePlaceholderCheckpoints(dir: string): Promise<void> {
  for (const fineTune of fineTunesOf(dir).filter(startsFromCheckpoint))
    await writeFile(path.join(dir, fineTune.init), '');
}

/** ml/common.py's in_validation: whether a fine-tune holds the photo back, by a hash of its file name. */
export function heldBackByName(file: string): boolean {
  return BigInt(`0x${createHash('sha1').update(file).digest('hex')}`) % 100n < 15n;
}

/**
 * A set of weights in `dir`: links to the non-commercial set's files, with `swaps` (file → shipped file it links to instead;
 * `reader-3.onnx: 'reader-1.onnx'` reads far worse), and, given `training`, a candidate's training.json.
 */
export async function linkShippedSet(
  dir: string,
  swaps: Record<string, string> = {},
  training?: Pick<Training, 'photos' | 'heldBack'>,
): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const file of await readdir(NONCOMMERCIAL_MODEL_DIR))
    await symlink(path.join(NONCOMMERCIAL_MODEL_DIR, swaps[file] ?? file), path.join(dir, file));
  if (training) {
    const written: Training = {
      base: NONCOMMERCIAL_MODEL_DIR,
      trainedOn: 0,
      minutes: 0,
      finishedAt: new Date().toISOString(),
      ...training,
    };
    await writeFile(path.join(dir, TRAINING_FILE), JSON.stringify(written));
  }
  return dir;
}

/** Where the fine-tune cannot run (CI has no torch), the reason, as ml/can_fine_tune.py gives it. */
export function cannotFineTune(): string | false {
  if (!existsSync(DEFAULT_PYTHON)) return `no ${DEFAULT_PYTHON}`;
  const check = spawnSync(DEFAULT_PYTHON, ['can_fine_tune.py'], {
    cwd: path.join(import.meta.dirname, '..', '..', 'ml'),
    encoding: 'utf8',
  });
  return check.status === 0 ? false : `the fine-tune is not run here: ${check.stderr.trim().split('\n').at(-1)}`;
}
