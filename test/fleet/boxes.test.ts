import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadConfig, DEFAULT_MODEL_DIR } from '../../src/config.ts';
import { fillCounterBoxes } from '../../src/fleet/boxes.ts';
import { drawMeter } from '../fakes/meter-photo.ts';
import { writeDrawnPhotos } from '../helpers/fleet.ts';

t.test("photos without a counter box (a hosted reader's) get the one the weights read their label in", async (t) => {
  const photos = await mkdtemp(path.join(tmpdir(), 'meterlens-boxes-'));
  t.teardown(() => rm(photos, { recursive: true, force: true }));
  await writeDrawnPhotos(photos, [
    { file: 'boxed.jpg', reading: '02390.276' },
    { file: 'read.jpg', reading: '00758.407', boxless: true },
    { file: 'mislabelled.jpg', reading: '99999.999', shows: '00758.407', boxless: true },
  ]);
  const before = (await readFile(path.join(photos, 'labels.csv'), 'utf8')).split('\n');

  t.same(await fillCounterBoxes(loadConfig({}), DEFAULT_MODEL_DIR, photos), { found: 1, without: 1 });
  const rows = (await readFile(path.join(photos, 'labels.csv'), 'utf8')).split('\n');
  t.equal(rows[1], before[1], 'a box given stays');
  t.equal(rows[3], 'mislabelled.jpg,99999.999,', 'a photo whose label the weights cannot read there stays without');
  const [file, reading, quad] = rows[2]!.split(',');
  t.same([file, reading], ['read.jpg', '00758.407']);
  const corners = quad!.split(' ').map(Number);
  t.equal(corners.length, 8);
  const { counter } = await drawMeter('00758', '407');
  const [xs, ys] = [corners.filter((_, index) => index % 2 === 0), corners.filter((_, index) => index % 2 === 1)];
  const centre = { x: (Math.min(...xs) + Math.max(...xs)) / 2, y: (Math.min(...ys) + Math.max(...ys)) / 2 };
  t.ok(
    Math.abs(centre.x - (counter.left + counter.width / 2)) < counter.width / 10,
    `centred on the counter across (${centre.x})`,
  );
  t.ok(Math.abs(centre.y - (counter.top + counter.height / 2)) < counter.height / 2, `and down (${centre.y})`);
});
