import { readFile } from 'node:fs/promises';
import path from 'node:path';

const REPO_ROOT = path.resolve(import.meta.dirname, '..', '..');
/** The labelled photos, beside the checkout: never part of the repository. */
export const SHARED_DATASETS = path.resolve(REPO_ROOT, '..', 'shared', 'datasets');
/** The datasets the local model was validated on, each with the photo list no training run saw. */
export const VALIDATION_SETS = ['toloka', 'bdci2020'];

/** Each validation dataset's folder under SHARED_DATASETS and its validation photos (ml/splits/NAME-val.txt). */
export function validationSplit(): Promise<Array<{ name: string; dir: string; only: Set<string> }>> {
  return Promise.all(
    VALIDATION_SETS.map(async (name) => ({
      name,
      dir: path.join(SHARED_DATASETS, name),
      only: await loadFileList(path.join(REPO_ROOT, 'ml', 'splits', `${name}-val.txt`)),
    })),
  );
}

export interface LabelledPhoto {
  /** Path relative to the dataset folder, as labels.csv names it. */
  file: string;
  /** The label first, then its alternatives. */
  accepted: string[];
}

/**
 * Photos listed in `<dir>/labels.csv` (header with `file`, `reading` and optionally `alternatives`, `|`-joined;
 * other columns are ignored), optionally only those named in `only`.
 */
export async function loadLabelledPhotos(dir: string, only?: Set<string>): Promise<LabelledPhoto[]> {
  const labelsFile = path.join(dir, 'labels.csv');
  const text = await readFile(labelsFile, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'ENOENT'
      ? new Error(`no ${labelsFile} (a "file,reading[,alternatives]" header, then one photo a line)`)
      : error;
  });
  const [header, ...lines] = text.split(/\r?\n/).filter((line) => line.trim() !== '');
  const columns = header!.split(',').map((name) => name.trim());
  const fileColumn = columns.indexOf('file');
  const readingColumn = columns.indexOf('reading');
  const alternativesColumn = columns.indexOf('alternatives');
  if (fileColumn < 0 || readingColumn < 0) throw new Error(`${dir}/labels.csv needs "file" and "reading" columns`);
  const photos: LabelledPhoto[] = [];
  for (const line of lines) {
    const cells = line.split(',');
    const file = cells[fileColumn]!.trim();
    if (only && !only.has(file)) continue;
    const reading = cells[readingColumn]!.trim();
    const alternatives =
      alternativesColumn >= 0 ? (cells[alternativesColumn] ?? '').split('|').map((a) => a.trim()) : [];
    photos.push({ file, accepted: [reading, ...alternatives.filter((a) => a !== '' && a !== reading)] });
  }
  return photos;
}

/** File names, one a line, as in ml/splits/*-val.txt. */
export async function loadFileList(listPath: string): Promise<Set<string>> {
  return new Set(
    (await readFile(listPath, 'utf8'))
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter(Boolean),
  );
}
