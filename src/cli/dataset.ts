import path from 'node:path';
import { requireId } from '../errors.ts';
import { exportDataset } from '../meters/dataset-export.ts';
import { PhotoStore } from '../photos/store.ts';
import { dateOption, optionalOption, singlePositional } from './args.ts';
import type { Command } from './context.ts';

export const datasetCommands: Command[] = [
  {
    name: 'dataset export',
    synopsis: 'DIR [--account N] [--since DATE]',
    description: 'write the photos people corrected or confirmed, with labels.csv for meterlens eval --dataset and ml/',
    options: { account: { type: 'string' }, since: { type: 'string' } },
    positionals: true,
    async run({ config, database, output }, args) {
      const dir = path.resolve(singlePositional(args, 'folder'));
      const account = optionalOption(args, 'account');
      const since = optionalOption(args, 'since') === undefined ? undefined : dateOption(args, 'since');
      const photos = await exportDataset({ db: await database(), photos: new PhotoStore(config.photoStore) }, dir, {
        accountId: account && requireId(account, '--account'),
        since,
      });
      const corrected = photos.filter((photo) => photo.label === 'corrected').length;
      output.print(
        { dir, photos: photos.length, corrected, confirmed: photos.length - corrected },
        `wrote ${photos.length} photos (${corrected} corrected, ${photos.length - corrected} confirmed) and labels.csv to ${dir}`,
      );
    },
  },
];
