import { migratePhotos, MIGRATE_BATCH_SIZE } from '../photos/migrate.ts';
import { PhotoStore } from '../photos/store.ts';
import { integerOption, requiredOption, UsageError } from './args.ts';
import type { Command } from './context.ts';

const TARGETS = ['s3', 'database'] as const;

export const photoCommands: Command[] = [
  {
    name: 'photos migrate',
    synopsis: `--to s3|database [--batch N]`,
    description: `move the stored photos to PHOTO_STORE (set it for the service first), ${MIGRATE_BATCH_SIZE} at a time by default, while the service runs; rerun to resume`,
    options: { to: { type: 'string' }, batch: { type: 'string' } },
    async run({ config, database, output }, args) {
      const to = requiredOption(args, 'to');
      if (!TARGETS.includes(to as (typeof TARGETS)[number]))
        throw new UsageError(`--to must be one of ${TARGETS.join(', ')}, got "${to}"`);
      const photos = new PhotoStore(config.photoStore);
      // The service puts new photos where PHOTO_STORE says: moving the old ones elsewhere would leave them split.
      if ((to === 's3') !== (photos.bucket !== undefined)) {
        throw new UsageError(
          `--to ${to} needs PHOTO_STORE=${to === 's3' ? 's3://bucket/prefix' : 'database'} (now ${config.photoStore.location}), here and for the service`,
        );
      }
      const batch = args.values.batch === undefined ? MIGRATE_BATCH_SIZE : integerOption(args, 'batch', 1);
      const done = await migratePhotos({ db: await database(), photos }, batch, (progress) =>
        output.print(
          progress,
          `moved ${progress.moved} photos to ${config.photoStore.location}, ${progress.left} left`,
        ),
      );
      output.print({ ...done, done: true }, `done: ${done.moved} photos moved to ${config.photoStore.location}`);
    },
  },
];
