import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.ts';
import { sameReading } from '../eval/metrics.ts';
import { layoutShownBy } from '../readers/layout.ts';
import { createLocalReader } from '../readers/local.ts';
import { ReaderError } from '../readers/reader.ts';

const PER_PHOTO_TIMEOUT_MS = 60_000;

/**
 * Fills in the empty counter boxes (`quad`) of a labels.csv where the local reader of `modelDir` finds the counter:
 * it reads each such photo, as stored, within its label (a window of that one value, in the layout the label shows)
 * and takes the box it read the label in, plausibly. A hosted reader gives no box, and the training scripts learn
 * nothing from a photo without one. Returns how many boxes were found and how many photos stay without.
 */
export async function fillCounterBoxes(
  config: Config,
  modelDir: string,
  photos: string,
): Promise<{ found: number; without: number }> {
  const labelsFile = path.join(photos, 'labels.csv');
  const [header, ...lines] = (await readFile(labelsFile, 'utf8')).split(/\r?\n/).filter((line) => line.trim());
  const columns = header!.split(',');
  const file = columns.indexOf('file');
  const reading = columns.indexOf('reading');
  const quad = columns.indexOf('quad');
  // Every cell of these files is free of commas (src/meters/dataset-export.ts; the datasets ml/ reads).
  const rows = lines.map((line) => line.split(','));
  if (quad < 0) return { found: 0, without: rows.length };
  const boxless = rows.filter((cells) => !cells[quad]?.trim());
  if (boxless.length === 0) return { found: 0, without: 0 };
  const reader = await createLocalReader({ ...config, localModelDir: modelDir });
  if (!reader) return { found: 0, without: boxless.length };
  let found = 0;
  for (const cells of boxless) {
    const label = cells[reading]!.trim();
    const value = Number(label);
    try {
      const image = await readFile(path.join(photos, cells[file]!.trim()));
      const read = await reader.read(
        image,
        AbortSignal.timeout(PER_PHOTO_TIMEOUT_MS),
        { reference: label, min: value, max: value },
        layoutShownBy(label),
      );
      // Implausible: the reader could not read the label there, only report it as the window's nearest value.
      if (!read.counterBox || read.plausibility === 'implausible' || !sameReading(read.reading, label)) continue;
      cells[quad] = read.counterBox.flat().join(' ');
      found++;
    } catch (error) {
      // A photo the reader finds nothing in stays without a box; anything else ends the run.
      if (!(error instanceof ReaderError)) throw error;
    }
  }
  await writeFile(labelsFile, `${[header, ...rows.map((cells) => cells.join(','))].join('\n')}\n`);
  return { found, without: boxless.length - found };
}
