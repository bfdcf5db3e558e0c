import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { correctReading } from '../../src/meters/corrections.ts';
import { exportDataset } from '../../src/meters/dataset-export.ts';
import { setReviewSettings } from '../../src/meters/review.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { createCustomer, startTestService, submitPhoto } from '../helpers/service.ts';

t.test(
  "what meterlens train learns from: hosted readers' sure, plausible readings only where the account allows it",
  async (t) => {
    // The test service reads with the hosted `openai` reader, whose fake answers 02390.276 at confidence 97.
    const service = await startTestService(t, { worker: false });
    const scratch = await mkdtemp(path.join(tmpdir(), 'meterlens-export-'));
    t.teardown(() => rm(scratch, { recursive: true, force: true }));
    const photo = await renderMeterPhoto();
    const customer = await createCustomer(service.db);
    const other = await createCustomer(service.db);
    const tenDaysAgo = {
      previous_reading: '2380',
      previous_read_at: new Date(Date.now() - 10 * 86_400_000).toISOString(),
    };
    const submit = async (key: string, fields: Record<string, string> = {}) => {
      const response = await submitPhoto(service, { key, image: photo, sync: true, fields });
      return response.body as { reference_id: string; confidence: number; plausibility: { status: string } };
    };
    const plausible = await submit(customer.key, tenDaysAgo);
    t.match(plausible, { confidence: 97, plausibility: { status: 'ok' } });
    const unknown = await submit(customer.key);
    t.match(unknown, { plausibility: { status: 'unknown' } }, 'no previous reading: not known to be plausible');
    const corrected = await submit(customer.key, tenDaysAgo);
    await correctReading(service, customer.accountId, corrected.reference_id, '02390.900', {
      apiKeyId: customer.keyId,
      label: 'test',
    });
    await submit(other.key, tenDaysAgo); // an account that never allowed it

    const exported = async (name: string, filter: Parameters<typeof exportDataset>[2]) =>
      (await exportDataset(service, path.join(scratch, name), filter)).map(({ file, label }) => `${file} ${label}`);
    const people = [`${corrected.reference_id}.jpg corrected`];
    t.same(
      await exported('off', { withHosted: true }),
      people,
      'by default an account trains on what people labelled only',
    );

    await setReviewSettings(service.db, customer.accountId, { trainOnHosted: true });
    t.same(
      await exported('on', { withHosted: true }),
      [`${plausible.reference_id}.jpg hosted`, ...people],
      'with train_on_hosted: the plausible reading at or above the review threshold, labelled hosted',
    );
    const labels = (await readFile(path.join(scratch, 'on', 'labels.csv'), 'utf8')).trim().split('\n');
    t.match(
      labels[1],
      new RegExp(`^${plausible.reference_id}\\.jpg,02390\\.276,,hosted,02390\\.276,`),
      'its own reading is its label; the hosted reader found no box',
    );
    t.same(await exported('export', {}), people, 'meterlens dataset export stays what people labelled');

    await setReviewSettings(service.db, customer.accountId, { reviewBelow: 98 });
    t.same(
      await exported('stricter', { withHosted: true }),
      people,
      'a reading less sure than the review threshold is no label',
    );
  },
);
