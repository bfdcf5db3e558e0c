import { existsSync } from 'node:fs';
import { mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadConfig, DEFAULT_MODEL_DIR, NONCOMMERCIAL_MODEL_DIR } from '../../src/config.ts';
import {
  compareWithCurrent,
  installCandidate,
  previousDir,
  refuseShippedFolder,
  rollBack,
} from '../../src/fleet/promote.ts';
import { TRAINING_FILE } from '../../src/fleet/weights.ts';
import { linkShippedSet, writeDrawnPhotos } from '../helpers/fleet.ts';

const scratch = await mkdtemp(path.join(tmpdir(), 'meterlens-promote-'));
t.teardown(() => rm(scratch, { recursive: true, force: true }));
const photos = path.join(scratch, 'photos');
const held = [
  { file: 'a.jpg', reading: '00758.407' },
  { file: 'b.jpg', reading: '02390.276' },
  { file: 'c.jpg', reading: '05807.431' },
];
await writeDrawnPhotos(photos, held);
const training = { photos, heldBack: held.map((photo) => photo.file) };
// The strip reader the others are aligned by, swapped for a BiGRU one: the windows are cut wrong and read far worse.
const BROKEN = { 'reader-3.onnx': 'reader-1.onnx' };
const config = (localModelDir: string) => ({ ...loadConfig({}), localModelDir });
/** Which shipped file a set's file links to. */
const shipped = async (dir: string, file: string) =>
  path.relative(NONCOMMERCIAL_MODEL_DIR, await realpath(path.join(dir, file)));

t.test('a candidate that reads the held-back photos worse is refused', async (t) => {
  const current = await linkShippedSet(path.join(scratch, 'good'));
  const candidate = await linkShippedSet(path.join(scratch, 'broken-candidate'), BROKEN, training);
  const comparison = await compareWithCurrent(config(current), candidate);
  t.match(comparison, { current: { photos: 3, wholeUnitsRight: 3, exact: 3 }, better: false });
  t.ok(
    comparison.candidate.wholeUnitsRight < 3,
    `the broken set reads ${comparison.candidate.wholeUnitsRight} of 3 right in whole units`,
  );
});

t.test('a better candidate goes in, the set it replaces is kept, and rollback swaps them back', async (t) => {
  const current = await linkShippedSet(path.join(scratch, 'in-use'), BROKEN);
  const candidate = await linkShippedSet(path.join(scratch, 'candidate'), {}, training);
  const comparison = await compareWithCurrent(config(current), candidate);
  t.match(comparison, { candidate: { wholeUnitsRight: 3, exact: 3 }, better: true });

  await installCandidate(config(current), candidate);
  t.equal(
    await shipped(current, 'reader-3.onnx'),
    'reader-3.onnx',
    'the candidate is where the service loads its weights',
  );
  t.ok(existsSync(path.join(current, TRAINING_FILE)), 'with what it learned from');
  t.equal(await shipped(previousDir(config(current)), 'reader-3.onnx'), 'reader-1.onnx', 'the set it replaced is kept');
  t.ok(existsSync(path.join(candidate, TRAINING_FILE)), 'the candidate folder stays as it was');

  await rollBack(config(current));
  t.equal(await shipped(current, 'reader-3.onnx'), 'reader-1.onnx', 'rolled back');
  t.equal(
    await shipped(previousDir(config(current)), 'reader-3.onnx'),
    'reader-3.onnx',
    'the promoted set kept in its turn',
  );
  await rollBack(config(current));
  t.equal(await shipped(current, 'reader-3.onnx'), 'reader-3.onnx', 'a second rollback undoes the first');
});

t.test('weights of the shipped folders are never replaced; no earlier weights: nothing to roll back', async (t) => {
  for (const shippedDir of [DEFAULT_MODEL_DIR, NONCOMMERCIAL_MODEL_DIR, `${DEFAULT_MODEL_DIR}/`])
    t.throws(() => refuseShippedFolder(config(shippedDir)), {
      kind: 'refused',
      message: /a folder that ships with Meterlens/,
    });
  t.doesNotThrow(
    () => refuseShippedFolder(config(`${DEFAULT_MODEL_DIR}-mine`)),
    'a sibling named alike is not shipped',
  );
  t.throws(
    () => refuseShippedFolder(config(path.join(DEFAULT_MODEL_DIR, '..x'))),
    'a folder in it named like its parent is',
  );
  const link = path.join(scratch, 'linked-models');
  await symlink(DEFAULT_MODEL_DIR, link);
  t.throws(
    () => refuseShippedFolder(config(link)),
    { kind: 'refused', message: /a folder that ships/ },
    'a link to a shipped folder is that folder',
  );
  await t.rejects(rollBack(config(path.join(scratch, 'never-promoted'))), {
    kind: 'not_found',
    message: /nothing to roll back to/,
  });
  await t.rejects(compareWithCurrent(config(DEFAULT_MODEL_DIR), photos), {
    kind: 'not_found',
    message: /no finished candidate set/,
  });
});
