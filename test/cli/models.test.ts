import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_MODEL_DIR, NONCOMMERCIAL_MODEL_DIR } from '../../src/config.ts';
import { TRAINING_FILE } from '../../src/fleet/weights.ts';
import { startCli } from '../helpers/cli.ts';
import { cannotFineTune, linkShippedSet, writeDrawnPhotos, writePlaceholderCheckpoints } from '../helpers/fleet.ts';

t.test('meterlens train: bad arguments, and a base set without checkpoints, stop before any work', async (t) => {
  const cli = await startCli(t);
  const photos = path.join(cli.scratch, 'photos');
  await writeDrawnPhotos(photos, [{ file: 'a.jpg', reading: '00758.407' }]);
  const usage = async (args: string[], message: RegExp) =>
    t.match(await cli.meterlens(['train', ...args]), { code: 2, stderr: message }, args.join(' '));
  await usage(['--minutes', '0'], /--minutes must be a number above 0 and at most 1440, got "0"/);
  await usage(
    ['--photos', photos, '--account', '1'],
    /--photos trains on the photos of that folder, not on the database/,
  );
  await usage(['--photos', cli.scratch], /has no labels.csv/);
  await usage(['--out', cli.scratch], /is no empty folder: name a new one/);
  await usage(['--out', path.join(photos, 'labels.csv')], /is no empty folder/);

  const shipped = await cli.meterlens([
    'train',
    '--photos',
    photos,
    '--base',
    NONCOMMERCIAL_MODEL_DIR,
    '--out',
    path.join(cli.scratch, 'run'),
  ]);
  t.equal(shipped.code, 1);
  t.match(
    shipped.stderr,
    /^meterlens: the weights in \S+ carry no PyTorch checkpoints beside their ONNX files, and a fine-tune starts from them: give --base a set/,
  );
  t.equal(shipped.stderr.trim().split('\n').length, 1, 'in one line');
  t.notOk(existsSync(path.join(cli.scratch, 'run', 'candidate')), 'nothing written');
});

t.test(
  'meterlens train on the database: the labelled photos exported, too few stop it',
  { skip: cannotFineTune() },
  async (t) => {
    const cli = await startCli(t);
    const { id } = await cli.json(['accounts', 'create', '--name', 'Waterworks']);
    const base = path.join(cli.scratch, 'base');
    await mkdir(base);
    await writePlaceholderCheckpoints(base);
    const run = await cli.meterlens([
      'train',
      '--account',
      String(id),
      '--base',
      base,
      '--out',
      path.join(cli.scratch, 'run'),
    ]);
    t.equal(run.code, 1, run.stderr);
    t.match(run.stderr, /^exported 0 photos to \S+: 0 corrected, 0 confirmed, 0 read by a hosted reader$/m);
    t.match(
      run.stderr,
      /meterlens: 0 labelled photos with a counter box in \S+, 0 of them held back: too few to learn from/,
    );
  },
);

t.test('meterlens models promote and rollback, as an operator runs them', async (t) => {
  const cli = await startCli(t);
  const inUse = path.join(cli.scratch, 'weights');
  await mkdir(inUse);
  const photos = path.join(cli.scratch, 'photos');
  await writeDrawnPhotos(photos, [{ file: 'a.jpg', reading: '00758.407' }]);
  const candidate = await linkShippedSet(path.join(cli.scratch, 'candidate'), {}, { photos, heldBack: ['a.jpg'] });
  const env = { LOCAL_MODEL_DIR: inUse };

  t.match(await cli.meterlens(['models', 'promote'], env), {
    code: 2,
    stderr: /expected exactly one candidate folder/,
  });
  t.match(await cli.meterlens(['models', 'promote', photos], env), {
    code: 1,
    stderr: /no finished candidate set: it has no training.json/,
  });
  t.match(await cli.meterlens(['models', 'promote', candidate], { LOCAL_MODEL_DIR: DEFAULT_MODEL_DIR }), {
    code: 1,
    stderr: /a folder that ships with Meterlens: copy its weights to a folder of your own/,
  });
  t.match(await cli.meterlens(['models', 'rollback'], env), { code: 1, stderr: /nothing to roll back to/ });

  // Weights in use that read nothing (none there): any candidate that reads reads better.
  const promoted = await cli.meterlens(['models', 'promote', candidate], env);
  t.equal(promoted.code, 0, promoted.stderr);
  t.match(
    promoted.stdout,
    /the 1 photos held back from the candidate's training:\n {2}weights in use {2}whole units right 0 \(0\.0%\), exact 0 \(0\.0%\)/,
  );
  t.match(promoted.stdout, /candidate {7}whole units right 1 \(100\.0%\), exact 1 \(100\.0%\)/);
  t.match(promoted.stdout, /restart it/);
  t.ok(existsSync(path.join(inUse, TRAINING_FILE)), 'the candidate is in use');

  const refused = await cli.meterlens(['models', 'promote', candidate, '--json'], env);
  t.equal(refused.code, 1, 'the same weights again read no better');
  t.match(JSON.parse(refused.stdout), {
    photos: 1,
    current: { wholeUnitsRight: 1, exact: 1 },
    candidate: { wholeUnitsRight: 1, exact: 1 },
    promoted: false,
  });
  t.match(refused.stderr, /no better than the weights in use/);

  t.match(await cli.json(['models', 'rollback'], env), { current: inUse, previous: `${inUse}.previous` });
  t.notOk(existsSync(path.join(inUse, TRAINING_FILE)), 'the empty folder is back');
});
