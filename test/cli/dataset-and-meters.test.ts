import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import t from 'tap';
import { loadLabelledPhotos } from '../../src/eval/dataset.ts';
import { correctReading } from '../../src/meters/corrections.ts';
import { exportDataset } from '../../src/meters/dataset-export.ts';
import { readContext } from '../../src/pipeline/expect-reading.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { createCustomer, startTestService, submitPhoto, type TestService } from '../helpers/service.ts';

const root = path.join(import.meta.dirname, '..', '..');

/** bin/meterlens.js with --json against the service's database: exit code and the parsed output. */
async function meterlens(
  service: TestService,
  args: string[],
): Promise<{ code: unknown; result: any; stderr: string }> {
  const child = spawn(process.execPath, [path.join(root, 'bin', 'meterlens.js'), ...args, '--json'], {
    env: { ...process.env, DATABASE_URL: service.databaseUrl },
    cwd: root,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise((resolve) => child.on('close', resolve));
  return { code, result: stdout ? JSON.parse(stdout) : undefined, stderr };
}

t.test('dataset export: corrected and confirmed photos, read back by the eval loader', async (t) => {
  const service = await startTestService(t, { worker: false });
  const scratch = await mkdtemp(path.join(tmpdir(), 'meterlens-export-'));
  t.teardown(() => rm(scratch, { recursive: true, force: true }));
  const photo = await renderMeterPhoto();
  const customer = await createCustomer(service.db);
  const other = await createCustomer(service.db);
  const submit = async (key: string) =>
    (await submitPhoto(service, { key, image: photo, sync: true })).body.reference_id as string;

  const corrected = await submit(customer.key);
  const confirmed = await submit(customer.key);
  await submit(customer.key); // never looked at by a person: not exported
  const othersCorrected = await submit(other.key);
  const by = { apiKeyId: customer.keyId, label: 'test' };
  await correctReading(service, customer.accountId, corrected, '02391.000', by);
  await correctReading(service, customer.accountId, corrected, '02390.900', by); // the newest correction counts
  await correctReading(service, customer.accountId, confirmed, '02390.276', by);
  const beforeOthers = new Date();
  await correctReading(service, other.accountId, othersCorrected, '00001.000', {
    apiKeyId: other.keyId,
    label: 'test',
  });

  const dir = path.join(scratch, 'all');
  const exported = await exportDataset(service, dir, { accountId: customer.accountId });
  t.same(
    exported.map((photo) => photo.label),
    ['corrected', 'confirmed'],
  );
  t.same(
    await loadLabelledPhotos(dir),
    [
      { file: `${corrected}.jpg`, accepted: ['02390.900'] },
      { file: `${confirmed}.jpg`, accepted: ['02390.276'] },
    ],
    'meterlens eval --dataset reads the labels',
  );
  const labels = (await readFile(path.join(dir, 'labels.csv'), 'utf8')).trim().split('\n');
  t.equal(labels[0], 'file,reading,quad,label,machine_reading,reference_id,meter_id,labelled_at');
  t.match(labels[1], new RegExp(`^${corrected}\\.jpg,02390\\.900,[0-9 ]*,corrected,02390\\.276,${corrected},,\\d{4}-`));
  const metadata = await sharp(await readFile(path.join(dir, `${corrected}.jpg`))).metadata();
  t.equal(metadata.format, 'jpeg');
  t.notOk(metadata.orientation && metadata.orientation !== 1, 'upright: no EXIF rotation left to apply');

  const since = await exportDataset(service, path.join(scratch, 'since'), { since: beforeOthers });
  t.same(
    since.map((photo) => photo.file),
    [`${othersCorrected}.jpg`],
    '--since keeps later labels; no --account: every account',
  );

  const cliDir = path.join(scratch, 'cli');
  const run = await meterlens(service, ['dataset', 'export', cliDir, '--account', customer.accountId]);
  t.equal(run.code, 0);
  t.same(run.result, { dir: cliDir, photos: 2, corrected: 1, confirmed: 1 });
  t.equal((await loadLabelledPhotos(cliDir)).length, 2);
});

t.test("meters max-flow: the account default and one meter's, used by the window", async (t) => {
  const service = await startTestService(t, { worker: false });
  const customer = await createCustomer(service.db);
  const photo = await renderMeterPhoto();
  const submitWith = async (meterId: string) => {
    const form = new FormData();
    form.append('meter_id', meterId);
    form.append('previous_reading', '100');
    form.append('previous_read_at', new Date(Date.now() - 10 * 3_600_000).toISOString());
    form.append('image', new Blob([photo]), 'meter.jpg');
    const response = await fetch(`${service.url}/api/meter-reading`, {
      method: 'POST',
      headers: { authorization: `Bearer ${customer.key}` },
      body: form,
    });
    const { reference_id } = (await response.json()) as { reference_id: string };
    const meter = await service.db
      .selectFrom('submissions')
      .select('id')
      .where('reference_id', '=', reference_id)
      .executeTakeFirstOrThrow();
    return (await readContext(service.db, meter.id)).window!;
  };
  t.ok(Math.abs((await submitWith('A')).max - 125) < 0.01, 'default: 2.5 m³/h over 10 hours');

  t.match(await meterlens(service, ['meters', 'max-flow', '--account', customer.accountId, '--m3-per-hour', '1']), {
    code: 0,
    result: { maxFlowM3PerHour: 1 },
  });
  t.match(
    await meterlens(service, [
      'meters',
      'max-flow',
      '--account',
      customer.accountId,
      '--meter',
      'B',
      '--m3-per-hour',
      '10',
    ]),
    {
      code: 0,
      result: { meter: 'B', maxFlowM3PerHour: 10, effectiveMaxFlowM3PerHour: 10 },
    },
  );
  t.ok(Math.abs((await submitWith('A')).max - 110) < 0.01, 'the account default');
  t.ok(Math.abs((await submitWith('B')).max - 200) < 0.01, "the meter's own");
  t.match(
    await meterlens(service, [
      'meters',
      'max-flow',
      '--account',
      customer.accountId,
      '--meter',
      'B',
      '--m3-per-hour',
      'account',
    ]),
    {
      code: 0,
      result: { maxFlowM3PerHour: null, effectiveMaxFlowM3PerHour: 1 },
    },
  );
  t.match(await meterlens(service, ['meters', 'max-flow', '--account', customer.accountId, '--m3-per-hour', '0']), {
    code: 2,
    stderr: /above 0/,
  });
  t.match(await meterlens(service, ['meters', 'max-flow', '--account', '999999', '--m3-per-hour', '3']), {
    code: 1,
    stderr: /no account/,
  });

  const patch = async (meterId: string, body: unknown) => {
    const response = await fetch(`${service.url}/api/meters/${meterId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${customer.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  };
  t.match(
    await patch('C', { max_flow_m3_per_hour: 4 }),
    { status: 200, body: { meter_id: 'C', max_flow_m3_per_hour: 4, effective_max_flow_m3_per_hour: 4 } },
    "the API sets a meter's max flow, before its first photo too",
  );
  t.ok(Math.abs((await submitWith('C')).max - 140) < 0.01);
  t.match(await patch('C', { max_flow_m3_per_hour: null }), {
    status: 200,
    body: { max_flow_m3_per_hour: null, effective_max_flow_m3_per_hour: 1 },
  });
  for (const value of [0, -1, 'fast', 1e9]) {
    t.match(
      await patch('C', { max_flow_m3_per_hour: value }),
      { status: 422, body: { errors: { max_flow_m3_per_hour: [String] } } },
      String(value),
    );
  }
});

t.test(
  "meters review: the account's review threshold and default usual consumption, used by needs_review and the usual window",
  async (t) => {
    const service = await startTestService(t, { worker: false });
    const customer = await createCustomer(service.db);
    const submit = async (fields: Record<string, string>) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      form.append('image', new Blob([await renderMeterPhoto()]), 'meter.jpg');
      const response = await fetch(`${service.url}/api/meter-reading/sync`, {
        method: 'POST',
        headers: { authorization: `Bearer ${customer.key}` },
        body: form,
      });
      return (await response.json()) as {
        confidence: number;
        needs_review: boolean;
        plausibility: { status: string; window: { usual_max: number } };
      };
    };
    const tenDaysAgo = {
      previous_reading: '2380',
      previous_read_at: new Date(Date.now() - 10 * 86_400_000).toISOString(),
    };
    t.match(
      await submit(tenDaysAgo),
      { confidence: 97, needs_review: false, plausibility: { status: 'ok' } },
      'defaults: 80, and 1.5 m³ a day',
    );

    t.match(
      await meterlens(service, [
        'meters',
        'review',
        '--account',
        customer.accountId,
        '--below',
        '98',
        '--usual-m3-per-day',
        '0.2',
      ]),
      {
        code: 0,
        result: {
          account: Number(customer.accountId),
          reviewBelow: 98,
          usualM3PerDayDefault: 0.2,
          trainOnHosted: false,
        },
      },
    );
    const after = await submit(tenDaysAgo);
    t.match(
      after,
      { needs_review: true, plausibility: { status: 'suspicious' } },
      '10.276 m³ in ten days is far above 0.2 m³ a day; 97 is below 98',
    );
    t.ok(
      Math.abs(after.plausibility.window.usual_max - (2380 + 3 * 0.2 * 10 + 1)) < 0.01,
      `usual_max ${after.plausibility.window.usual_max}`,
    );
    t.match(await meterlens(service, ['meters', 'review', '--account', customer.accountId, '--below', '101']), {
      code: 2,
      stderr: /--below must be an integer/,
    });
    t.match(
      await meterlens(service, ['meters', 'review', '--account', customer.accountId, '--usual-m3-per-day', '0']),
      { code: 2, stderr: /above 0/ },
    );
    t.match(await meterlens(service, ['meters', 'review', '--account', '999999', '--below', '80']), {
      code: 1,
      stderr: /no account/,
    });
    t.match(await meterlens(service, ['meters', 'review', '--account', customer.accountId]), {
      code: 2,
      stderr: /give --below, --usual-m3-per-day, --train-on-hosted or several of them/,
    });
    t.match(
      await meterlens(service, ['meters', 'review', '--account', customer.accountId, '--train-on-hosted', 'true']),
      {
        code: 2,
        stderr: /--train-on-hosted must be yes or no, got "true"/,
      },
    );
    t.match(
      await meterlens(service, ['meters', 'review', '--account', customer.accountId, '--train-on-hosted', 'yes']),
      {
        code: 0,
        result: { reviewBelow: 98, usualM3PerDayDefault: 0.2, trainOnHosted: true },
      },
    );
  },
);
