import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';
import { loadLabelledPhotos } from '../../src/eval/dataset.ts';
import { correctReading } from '../../src/meters/corrections.ts';
import { exportDataset } from '../../src/meters/dataset-export.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { createCustomer, startTestService, submitPhoto } from '../helpers/service.ts';

const root = path.join(import.meta.dirname, '..', '..');

t.test('dataset export: corrected and confirmed photos, read back by the eval loader', async (t) => {
  const service = await startTestService(t, { worker: false });
  const scratch = await mkdtemp(path.join(tmpdir(), 'meterlens-export-'));
  t.teardown(() => rm(scratch, { recursive: true, force: true }));
  const photo = await renderMeterPhoto();
  const customer = await createCustomer(service.db);
  const other = await createCustomer(service.db);
  const submit = async (key: string) => (await submitPhoto(service, { key, image: photo, sync: true })).body.reference_id as string;

  const corrected = await submit(customer.key);
  const confirmed = await submit(customer.key);
  await submit(customer.key); // never looked at by a person: not exported
  const othersCorrected = await submit(other.key);
  const by = { apiKeyId: customer.keyId, label: 'test' };
  await correctReading(service.db, customer.accountId, corrected, '02391.000', by);
  await correctReading(service.db, customer.accountId, corrected, '02390.900', by); // the newest correction counts
  await correctReading(service.db, customer.accountId, confirmed, '02390.276', by);
  const beforeOthers = new Date();
  await correctReading(service.db, other.accountId, othersCorrected, '00001.000', { apiKeyId: other.keyId, label: 'test' });

  const dir = path.join(scratch, 'all');
  const exported = await exportDataset(service.db, dir, { accountId: customer.accountId });
  t.same(exported.map((photo) => photo.label), ['corrected', 'confirmed']);
  t.same(await loadLabelledPhotos(dir), [
    { file: `${corrected}.jpg`, accepted: ['02390.900'] },
    { file: `${confirmed}.jpg`, accepted: ['02390.276'] },
  ], 'meterlens eval --dataset reads the labels');
  const labels = (await readFile(path.join(dir, 'labels.csv'), 'utf8')).trim().split('\n');
  t.equal(labels[0], 'file,reading,quad,label,machine_reading,reference_id,meter_id,labelled_at');
  t.match(labels[1], new RegExp(`^${corrected}\\.jpg,02390\\.900,[0-9 ]*,corrected,02390\\.276,${corrected},,\\d{4}-`));
  const metadata = await sharp(await readFile(path.join(dir, `${corrected}.jpg`))).metadata();
  t.equal(metadata.format, 'jpeg');
  t.notOk(metadata.orientation && metadata.orientation !== 1, 'upright: no EXIF rotation left to apply');

  const since = await exportDataset(service.db, path.join(scratch, 'since'), { since: beforeOthers });
  t.same(since.map((photo) => photo.file), [`${othersCorrected}.jpg`], '--since keeps later labels; no --account: every account');

  const cliDir = path.join(scratch, 'cli');
  const child = spawn(process.execPath, [path.join(root, 'bin', 'meterlens.js'), 'dataset', 'export', cliDir, '--account', customer.accountId, '--json'], {
    env: { ...process.env, DATABASE_URL: service.databaseUrl }, cwd: root,
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  t.equal(await new Promise((resolve) => child.on('close', resolve)), 0);
  t.same(JSON.parse(stdout), { dir: cliDir, photos: 2, corrected: 1, confirmed: 1 });
  t.equal((await loadLabelledPhotos(cliDir)).length, 2);
});
