import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { newestCorrection } from '../pipeline/expect-reading.ts';
import { loadJpeg, type PhotoDeps } from '../photos/meter-photos.ts';

export const LABELS_HEADER = [
  'file',
  'reading',
  'quad',
  'label',
  'machine_reading',
  'reference_id',
  'meter_id',
  'labelled_at',
];

export interface ExportedPhoto {
  file: string;
  reading: string;
  label: 'corrected' | 'confirmed' | 'hosted';
}

/** The reader a reading came from when the offline model made it (src/readers/local.ts); every other one is hosted. */
const LOCAL_READER = 'local';

/**
 * Writes every photo a person labelled (its newest correction; `confirmed` when equal to the
 * machine's reading, `corrected` otherwise) as `<reference_id>.jpg`, upright as the readers saw
 * it, and `labels.csv` in the format `meterlens eval --dataset` and ml/ read. `quad` is the
 * counter box the reader found (x y, clockwise from top-left), empty when it found none.
 * `withHosted` (what `meterlens train` learns from) adds, for the accounts whose settings say
 * `train_on_hosted`, the readings no person looked at that a hosted reader made at least as sure as
 * the account's review threshold and that are plausible (`ok`): labelled `hosted`.
 */
export async function exportDataset(
  deps: PhotoDeps,
  dir: string,
  filter: { accountId?: string; since?: Date; withHosted?: boolean } = {},
): Promise<ExportedPhoto[]> {
  const labelledAt = sql<Date>`coalesce(c.created_at, r.created_at)`;
  let query = deps.db
    .selectFrom('submissions as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .leftJoinLateral(newestCorrection(deps.db, ['reading', 'created_at']), (join) => join.onTrue())
    .leftJoin('readings as r', 'r.submission_id', 'm.id')
    .leftJoin('meter_points as p', 'p.id', 'm.meter_point_id')
    .select([
      'm.id',
      'm.reference_id',
      'p.external_id',
      'c.reading as label',
      'r.reading as machine_reading',
      'r.counter_box',
      labelledAt.as('labelled_at'),
    ])
    .where((eb) => {
      const byPerson = eb('c.reading', 'is not', null);
      if (!filter.withHosted) return byPerson;
      return eb.or([
        byPerson,
        eb.and([
          eb('a.train_on_hosted', '=', true),
          eb('m.status', '=', 'completed'),
          eb('r.reader', '<>', LOCAL_READER),
          eb('r.confidence', '>=', eb.ref('a.review_below')),
          eb('r.plausibility', '=', 'ok'),
        ]),
      ]);
    })
    .orderBy(labelledAt)
    .orderBy('m.id');
  if (filter.accountId) query = query.where('m.account_id', '=', filter.accountId);
  if (filter.since) query = query.where(labelledAt, '>=', filter.since);
  const rows = await query.execute();

  await mkdir(dir, { recursive: true });
  const lines = [LABELS_HEADER.join(',')];
  const exported: ExportedPhoto[] = [];
  for (const row of rows) {
    const jpeg = await loadJpeg(deps, row.id);
    // A photo that never decoded has no upright JPEG to learn from.
    if (!jpeg) continue;
    const file = `${row.reference_id}.jpg`;
    await writeFile(path.join(dir, file), jpeg);
    // Without a person's label the row is a hosted reading, which is its own label.
    const reading = row.label ?? row.machine_reading!;
    const label = row.label === null ? 'hosted' : row.label === row.machine_reading ? 'confirmed' : 'corrected';
    const quad =
      row.counter_box
        ?.flat()
        .map((coordinate) => Math.round(coordinate))
        .join(' ') ?? '';
    // Every cell is digits, a uuid, an ISO time or a meter_id ([A-Za-z0-9._:/-]): none needs quoting.
    lines.push(
      [
        file,
        reading,
        quad,
        label,
        row.machine_reading ?? '',
        row.reference_id,
        row.external_id ?? '',
        row.labelled_at.toISOString(),
      ].join(','),
    );
    exported.push({ file, reading, label });
  }
  await writeFile(path.join(dir, 'labels.csv'), `${lines.join('\n')}\n`);
  return exported;
}
