import { existsSync, realpathSync } from 'node:fs';
import { cp, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_MODEL_DIR, type Config } from '../config.ts';
import { DomainError } from '../errors.ts';
import { loadLabelledPhotos } from '../eval/dataset.ts';
import { isExact, isWholeUnitExact } from '../eval/metrics.ts';
import { readPhotos } from '../eval/run.ts';
import { createLocalReader } from '../readers/local.ts';
import { MODEL_FILES } from '../readers/local/model.ts';
import { readTraining } from './weights.ts';

/** How a set of weights reads a candidate's held-back photos. */
export interface SetScore {
  dir: string;
  photos: number;
  wholeUnitsRight: number;
  exact: number;
}

export interface Comparison {
  current: SetScore;
  candidate: SetScore;
  /** The candidate reads more photos right in their whole units than the current set, or as many and more exactly. */
  better: boolean;
}

/** Where the set a promote replaced is kept, for `meterlens models rollback`. */
export function previousDir(config: Pick<Config, 'localModelDir'>): string {
  return `${config.localModelDir}.previous`;
}

/**
 * Reads the candidate's held-back photos (training.json) with the candidate and with the set the service loads
 * (LOCAL_MODEL_DIR), as `meterlens eval` reads them. A current folder without weights reads none.
 */
export async function compareWithCurrent(config: Config, candidateDir: string): Promise<Comparison> {
  const training = await readTraining(candidateDir);
  const missing = MODEL_FILES.filter((file) => !existsSync(path.join(candidateDir, file)));
  if (missing.length)
    throw new DomainError(
      'not_found',
      'candidate',
      `${candidateDir} lacks ${missing.join(', ')}: no set of weights to promote`,
    );
  const photos = await loadLabelledPhotos(training.photos, new Set(training.heldBack));
  if (photos.length === 0)
    throw new DomainError(
      'not_found',
      'candidate',
      `none of the photos ${candidateDir} was judged by are left in ${training.photos}`,
    );
  const score = async (dir: string): Promise<SetScore> => {
    const reader = await createLocalReader({ ...config, localModelDir: dir });
    if (!reader) return { dir, photos: photos.length, wholeUnitsRight: 0, exact: 0 };
    const cases = await readPhotos(reader, training.photos, photos, {
      maxPixels: config.maxImagePixels,
      longSide: config.normalisedLongSide,
    });
    return {
      dir,
      photos: photos.length,
      wholeUnitsRight: cases.filter(isWholeUnitExact).length,
      exact: cases.filter(isExact).length,
    };
  };
  const current = await score(config.localModelDir);
  const candidate = await score(candidateDir);
  const better =
    candidate.wholeUnitsRight > current.wholeUnitsRight ||
    (candidate.wholeUnitsRight === current.wholeUnitsRight && candidate.exact > current.exact);
  return { current, candidate, better };
}

/**
 * Puts a copy of the candidate where the service loads its weights, the set it replaces kept in previousDir (an
 * older one there is dropped). Two renames of whole folders: a service starting between them finds no weights.
 */
export async function installCandidate(config: Config, candidateDir: string): Promise<void> {
  refuseShippedFolder(config);
  const current = config.localModelDir;
  const incoming = `${current}.incoming`;
  await rm(incoming, { recursive: true, force: true });
  await cp(candidateDir, incoming, { recursive: true });
  if (existsSync(current)) {
    await rm(previousDir(config), { recursive: true, force: true });
    await rename(current, previousDir(config));
  }
  await rename(incoming, current);
}

/** Swaps the set in use with the one the last promote replaced: a second rollback undoes the first. */
export async function rollBack(config: Config): Promise<void> {
  refuseShippedFolder(config);
  const current = config.localModelDir;
  const previous = previousDir(config);
  if (!existsSync(previous))
    throw new DomainError('not_found', 'previous', `no earlier weights at ${previous}: nothing to roll back to`);
  const swapping = `${current}.swapping`;
  const hadCurrent = existsSync(current);
  if (hadCurrent) await rename(current, swapping);
  await rename(previous, current);
  if (hadCurrent) await rename(swapping, previous);
}

/**
 * The shipped sets (models/ and the folder in it) are part of the installed code (git, npm, the image): weights of
 * one's own live elsewhere.
 */
export function refuseShippedFolder(config: Pick<Config, 'localModelDir'>): void {
  // Through links too: a folder that links to a shipped one is that folder.
  const real = (dir: string) => (existsSync(dir) ? realpathSync(dir) : path.resolve(dir));
  const dir = real(config.localModelDir);
  const inShipped = path.relative(real(DEFAULT_MODEL_DIR), dir);
  if (inShipped === '..' || inShipped.startsWith(`..${path.sep}`) || path.isAbsolute(inShipped)) return;
  throw new DomainError(
    'refused',
    'LOCAL_MODEL_DIR',
    `LOCAL_MODEL_DIR is ${dir}, a folder that ships with Meterlens: copy its weights to a folder of your own ` +
      `(mkdir -p /srv/meterlens-models && cp ${path.relative(process.cwd(), dir) || '.'}/*.* /srv/meterlens-models), set LOCAL_MODEL_DIR to that folder, and promote there`,
  );
}
