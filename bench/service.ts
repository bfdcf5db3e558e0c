/**
 * `npm run bench`: starts the real service (`meterlens serve`) against a fresh database, with a fake
 * OpenAI reader that answers after a fixed 100 ms, and prints one table per measurement, each beside
 * a baseline measured in the same run. bench/README.md explains the numbers.
 *
 *   node bench/service.ts [--requests N] [--warmup N] [--costly-images-only]
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { Agent } from 'undici';
import { renderMeterPhoto } from '../test/fakes/meter-photo.ts';
import { startFakeOpenAI } from '../test/fakes/openai-server.ts';
import { startWebhookReceiver } from '../test/fakes/webhook-receiver.ts';
import {
  benchServer,
  type Child,
  cleanups,
  createBenchAccounts,
  datasetPhotos,
  integerOption,
  ms,
  multipart,
  newDatabase,
  percentile,
  phoneLikePhoto,
  printTable,
  resultsDir,
  runBenchmark,
  SHARED_DATASETS,
  send,
  startChild,
  timed,
  type Upload,
} from './harness.ts';

const READER_DELAY_MS = 100;
const ASYNC_CONCURRENCIES = [1, 4, 16];
const SYNC_CONCURRENCIES = [1, 4];
const WEBHOOK_CONCURRENCIES = [1, 4];
const FLOOR_CONCURRENCIES = [1, 4];
/**
 * Issue 44's tenant fairness: the photos of one account's burst, and how often the quiet account
 * submits meanwhile (well within what its own share reads, so that it has no backlog of its own).
 */
const BURST_PHOTOS = 500;
const QUIET_INTERVAL_MS = 1000;
/** Worst-case uploads of an accepted kind sent at once, and their kind: a GIF at the default pixel limit. */
const COSTLY_IMAGES = 20;
const COSTLY_IMAGE_SIDE = 7071;

interface Options {
  /** Measured requests per async-ack and healthz row; sync and webhook rows use a quarter. */
  requests: number;
  /** Requests sent before each row and left out of it (connections, JIT, pools). */
  warmup: number;
  /** Only the costly images' table (a short run for the memory bound). */
  costlyImagesOnly: boolean;
}

interface Stats {
  concurrency: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  requestsPerSecond: number;
  samplesMs: number[];
}

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '400' },
    warmup: { type: 'string', default: '20' },
    'costly-images-only': { type: 'boolean', default: false },
  },
});
const options: Options = {
  requests: integerOption(args.requests, '--requests', 1),
  warmup: integerOption(args.warmup, '--warmup', 0),
  costlyImagesOnly: args['costly-images-only'],
};

await runBenchmark(() => benchmark(options));

async function benchmark(options: Options): Promise<void> {
  const database = await newDatabase(await benchServer());
  cleanups.add(database.drop);
  const databaseUrl = database.url;
  const openai = await startFakeOpenAI({ delayMs: READER_DELAY_MS });
  cleanups.add(() => openai.close());
  // The fake keeps every request body (a base64 photo each); nothing here reads them.
  const forgetRequests = setInterval(() => (openai.requests.length = 0), 1000);
  cleanups.add(async () => clearInterval(forgetRequests));
  const receiver = await startWebhookReceiver();
  cleanups.add(() => receiver.close());

  const service = await startService(databaseUrl, openai.url);
  const baseUrl = service.url;
  const floorUrl = (await startChild('floor', ['bench/floor-server.ts'], { DATABASE_URL: databaseUrl })).url;
  const [apiKey, burstKey] = await createBenchAccounts(databaseUrl, `${receiver.url}/webhook`, ['Benchmark', 'Burst']);
  const webhooks = webhookArrivals(receiver);
  const client = new Agent({ connections: 64 });
  cleanups.add(() => client.close());

  const photo = await benchPhoto();
  const upload = multipart(photo);
  const costlyImages = () => measureCostlyImages({ client, databaseUrl, openaiUrl: openai.url, apiKey, upload });
  if (options.costlyImagesOnly) {
    await writeResults({ date: new Date().toISOString(), machine: machine(), costlyImages: await costlyImages() });
    return;
  }
  const get = (pathname: string) => () => timed(() => send(client, 'GET', `${baseUrl}${pathname}`));
  const post = (pathname: string, key = apiKey) =>
    send(client, 'POST', `${baseUrl}${pathname}`, { authorization: `Bearer ${key}`, ...upload });
  const small = Math.max(1, Math.round(options.requests / 4));
  console.log(
    `# ${os.cpus().length} CPUs, node ${process.version}, photo ${(photo.length / 1024).toFixed(0)} KB, ` +
      `fake reader ${READER_DELAY_MS} ms, ${options.warmup} warm-up requests per row left out\n`,
  );

  const syncRows = [];
  for (const concurrency of SYNC_CONCURRENCIES) {
    syncRows.push(
      await measure(() => timed(() => post('/api/meter-reading/sync')), concurrency, small, options.warmup),
    );
  }
  printTable(`Sync reading: time to the 200 with the reading, against the fake reader's fixed ${READER_DELAY_MS} ms`, [
    ['concurrency', 'p50 ms', 'p99 ms', 'req/s', 'p50 over reader ms', 'p99 over reader ms', 'p50 ×', 'p99 ×'],
    ...syncRows.map((sync) => [
      sync.concurrency,
      ms(sync.p50Ms),
      ms(sync.p99Ms),
      rate(sync),
      ms(sync.p50Ms - READER_DELAY_MS),
      ms(sync.p99Ms - READER_DELAY_MS),
      ratio(sync.p50Ms, READER_DELAY_MS),
      ratio(sync.p99Ms, READER_DELAY_MS),
    ]),
  ]);

  const submitAndAwaitWebhook = async () => {
    const sentAt = Date.now(); // the receiver stamps arrivals with Date.now() too
    const { reference_id } = JSON.parse(await post('/api/meter-reading'));
    return (await webhooks.arrivalOf(reference_id)) - sentAt;
  };
  const webhookRows = [];
  for (const concurrency of WEBHOOK_CONCURRENCIES) {
    const webhook = await measure(submitAndAwaitWebhook, concurrency, small, options.warmup);
    webhookRows.push({ webhook, sync: syncRows.find((sync) => sync.concurrency === concurrency)! });
  }
  printTable('Async submission to the signed reading.completed webhook, against sync latency at the same concurrency', [
    ['concurrency', 'p50 ms', 'p99 ms', 'p50 over reader ms', 'sync p50 ms', 'sync p99 ms', 'p50 × sync', 'p99 × sync'],
    ...webhookRows.map(({ webhook, sync }) => [
      webhook.concurrency,
      ms(webhook.p50Ms),
      ms(webhook.p99Ms),
      ms(webhook.p50Ms - READER_DELAY_MS),
      ms(sync.p50Ms),
      ms(sync.p99Ms),
      ratio(webhook.p50Ms, sync.p50Ms),
      ratio(webhook.p99Ms, sync.p99Ms),
    ]),
  ]);

  const fairness = await measureTenantFairness(
    async () => {
      const { reference_id } = JSON.parse(await post('/api/meter-reading'));
      const ackedAt = Date.now(); // the receiver stamps arrivals with Date.now() too
      return (await webhooks.arrivalOf(reference_id)) - ackedAt;
    },
    async () => JSON.parse(await post('/api/meter-reading', burstKey)).reference_id,
    webhooks,
    small,
    options.warmup,
  );

  const costly = await costlyImages();

  // Last, because the acks leave a backlog of reads behind that would delay every webhook measured after
  // them, and the worker drains a backlog slowly (bench/README.md, "Caveats").
  const asyncRows = [];
  for (const concurrency of ASYNC_CONCURRENCIES) {
    const healthz = await measure(get('/healthz'), concurrency, options.requests, options.warmup);
    const ack = await measure(
      () => timed(() => post('/api/meter-reading')),
      concurrency,
      options.requests,
      options.warmup,
    );
    asyncRows.push({ concurrency, ack, healthz });
  }
  printTable('Async submission: time to the 202 ack, against GET /healthz at the same concurrency', [
    ['concurrency', ...againstColumns('ack', 'healthz')],
    ...asyncRows.map(({ concurrency, ack, healthz }) => [concurrency, ...against(ack, healthz)]),
  ]);

  // The web process alone, as deployed beside a worker process elsewhere: no reads on these cores.
  await service.stop();
  const web = await startChild('web', [path.join('src', 'cli.ts'), 'web'], serviceEnv(databaseUrl, openai.url));
  const realSize = await measureAgainstFloor(
    client,
    `${web.url}/api/meter-reading`,
    apiKey,
    `${floorUrl}/upload`,
    options,
  );

  await writeResults({
    date: new Date().toISOString(),
    machine: machine(),
    options: { ...options, readerDelayMs: READER_DELAY_MS, photoBytes: photo.length },
    async: asyncRows,
    sync: syncRows,
    webhook: webhookRows.map(({ webhook }) => webhook),
    tenantFairness: fairness,
    costlyImages: costly,
    realSizePhotoAgainstFloor: realSize,
  });
}

function machine() {
  return { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version };
}

async function writeResults(results: object): Promise<void> {
  await mkdir(resultsDir, { recursive: true });
  const resultsFile = path.join(resultsDir, 'latest.json');
  await writeFile(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`raw numbers: ${path.relative(process.cwd(), resultsFile)}`);
}

/**
 * Issue 44's tenant fairness: the quiet account's ack → reading.completed webhook, one at a time
 * with the queue idle; then another account submits BURST_PHOTOS photos, 16 at a time, and the quiet
 * account submits one every QUIET_INTERVAL_MS (not waiting for its readings, so that a slow reading
 * does not mean fewer samples) until the burst's last webhook has arrived. The quiet samples are split by when they
 * were acked: while the burst was still being sent, and after, while its backlog was read. The burst's time runs from
 * its first submission to its last webhook.
 */
async function measureTenantFairness(
  quietAckToReading: () => Promise<number>,
  submitBurstPhoto: () => Promise<string>,
  webhooks: ReturnType<typeof webhookArrivals>,
  idleSamples: number,
  warmup: number,
) {
  const idle = await measure(quietAckToReading, 1, idleSamples, warmup);
  const startedAt = Date.now();
  let sentAt = Number.POSITIVE_INFINITY;
  let burstRead = false;
  const burst = (async () => {
    const referenceIds: string[] = [];
    await measure(() => timed(async () => referenceIds.push(await submitBurstPhoto())), 16, BURST_PHOTOS, 0);
    sentAt = Date.now();
    let lastReadAt = startedAt;
    for (const referenceId of referenceIds) lastReadAt = Math.max(lastReadAt, await webhooks.arrivalOf(referenceId));
    return (lastReadAt - startedAt) / 1000;
  })().finally(() => (burstRead = true));
  const quiet: Array<Promise<{ ackedAt: number; ms: number }>> = [];
  while (!burstRead) {
    quiet.push(quietAckToReading().then((ms) => ({ ackedAt: Date.now() - ms, ms })));
    await sleep(QUIET_INTERVAL_MS);
  }
  const burstSeconds = await burst;
  const samples = await Promise.all(quiet);
  const whileSent = samples.filter((sample) => sample.ackedAt < sentAt).map((sample) => sample.ms);
  const whileRead = samples.filter((sample) => sample.ackedAt >= sentAt).map((sample) => sample.ms);
  const row = (phase: string, during: number[]) => [
    phase,
    during.length,
    ms(percentile(during, 50)),
    ms(percentile(during, 99)),
    ratio(percentile(during, 50), idle.p50Ms),
    ratio(percentile(during, 99), idle.p99Ms),
  ];
  printTable(
    `Tenant fairness: one account's ack to its reading.completed webhook, idle and while another account's ${BURST_PHOTOS} photos ` +
      `are sent (16 at a time) and read (${burstSeconds.toFixed(1)} s from the first sent to the last read, ${(BURST_PHOTOS / burstSeconds).toFixed(1)} reads/s)`,
    [
      ['quiet account', 'samples', 'p50 ms', 'p99 ms', 'p50 × idle', 'p99 × idle'],
      ['idle', idle.requests, ms(idle.p50Ms), ms(idle.p99Ms), ratio(1, 1), ratio(1, 1)],
      row('while the burst is sent', whileSent),
      row('while its backlog is read', whileRead),
    ],
  );
  return { idle, whileSentMs: whileSent, whileReadMs: whileRead, burstPhotos: BURST_PHOTOS, burstSeconds };
}

/**
 * Issue 12's costly tiny uploads: COSTLY_IMAGES worst-case images of an accepted kind (a
 * COSTLY_IMAGE_SIDE² GIF, about 50 MP in a few KB) sent at once to the sync endpoint, which decodes
 * inline, of a fresh `meterlens web` process. First alone: its peak memory (VmHWM, Linux, over its
 * whole life) is then the burst's, with no other image work in the process meanwhile. Then again,
 * while a normal photo's ack is measured one at a time, against that ack when idle (measured
 * before and after).
 */
async function measureCostlyImages(bench: {
  client: Agent;
  databaseUrl: string;
  openaiUrl: string;
  apiKey: string;
  upload: Upload;
}) {
  const web = await startChild(
    'costly-web',
    [path.join('src', 'cli.ts'), 'web'],
    serviceEnv(bench.databaseUrl, bench.openaiUrl),
  );
  const post = (pathname: string, upload: Upload) =>
    send(bench.client, 'POST', `${web.url}${pathname}`, { authorization: `Bearer ${bench.apiKey}`, ...upload });
  const gif = await sharp({
    create: { width: COSTLY_IMAGE_SIDE, height: COSTLY_IMAGE_SIDE, channels: 3, background: '#808080' },
  })
    .gif()
    .toBuffer();
  const costly = multipart(gif);
  const burst = () => Promise.all(Array.from({ length: COSTLY_IMAGES }, () => post('/api/meter-reading/sync', costly)));

  const aloneStartedAt = performance.now();
  await burst();
  const aloneSeconds = (performance.now() - aloneStartedAt) / 1000;
  const peakAloneMb = await peakMemoryMb(web.pid);

  const ack = () => timed(() => post('/api/meter-reading', bench.upload));
  const idleBefore = await measure(ack, 1, 50, 5);
  const startedAt = performance.now();
  let burstDone = false;
  const withAcks = burst().finally(() => (burstDone = true));
  const during: number[] = [];
  while (!burstDone) during.push(await ack());
  await withAcks;
  const burstSeconds = (performance.now() - startedAt) / 1000;
  const peakRssMb = await peakMemoryMb(web.pid);
  const idleAfter = await measure(ack, 1, 50, 0);
  await web.stop();
  // The machine is shared: the quieter of the two idle measurements is the stricter baseline.
  const idle = idleBefore.p50Ms <= idleAfter.p50Ms ? idleBefore : idleAfter;
  const duringP50 = percentile(during, 50);
  printTable(
    `${COSTLY_IMAGES} sync uploads of a ${COSTLY_IMAGE_SIDE}×${COSTLY_IMAGE_SIDE} GIF (${(gif.length / 1024).toFixed(0)} KB) at once to a fresh web process, ` +
      "alone and then with a normal photo's ack meanwhile (against the same ack idle); the process's peak memory after each",
    [
      [
        'alone s',
        'peak RSS MB alone',
        'idle ack p50 ms (before, after)',
        'ack p50 ms during',
        'ack p99 ms during',
        'acks during',
        'p50 × idle',
        'with acks s',
        'peak RSS MB after both',
      ],
      [
        aloneSeconds.toFixed(1),
        peakAloneMb ?? 'n/a',
        `${ms(idleBefore.p50Ms)}, ${ms(idleAfter.p50Ms)}`,
        ms(duringP50),
        ms(percentile(during, 99)),
        during.length,
        ratio(duringP50, idle.p50Ms),
        burstSeconds.toFixed(1),
        peakRssMb ?? 'n/a',
      ],
    ],
  );
  return {
    aloneSeconds,
    peakAloneMb,
    idleBefore,
    idleAfter,
    duringMs: during,
    burstSeconds,
    peakRssMb,
    gifBytes: gif.length,
  };
}

/** Peak resident memory of a process in MB, from /proc (Linux); undefined elsewhere. */
async function peakMemoryMb(pid: number): Promise<number | undefined> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => undefined);
  const kilobytes = status?.match(/^VmHWM:\s+(\d+) kB$/m)?.[1];
  return kilobytes === undefined ? undefined : Math.round(Number(kilobytes) / 1024);
}

/**
 * Issue 13's bar: the async ack of a real-size phone photo (a 12 MP JPEG with EXIF orientation,
 * made from a shared photo at run time) against the floor server at the same concurrency.
 */
async function measureAgainstFloor(client: Agent, ackUrl: string, apiKey: string, floorUrl: string, options: Options) {
  const photo = await twelveMegapixelPhoto();
  if (!photo) {
    console.log(`12 MP photo against the floor: skipped, no shared photos at ${SHARED_DATASETS}/toloka\n`);
    return undefined;
  }
  const upload = multipart(photo);
  const requests = Math.max(1, Math.round(options.requests / 4));
  const rows = [];
  for (const concurrency of FLOOR_CONCURRENCIES) {
    const [floor, ack] = await measureInterleaved(
      [
        () => timed(() => send(client, 'POST', floorUrl, { authorization: '', ...upload })),
        () => timed(() => send(client, 'POST', ackUrl, { authorization: `Bearer ${apiKey}`, ...upload })),
      ],
      concurrency,
      requests,
      options.warmup,
    );
    rows.push({ concurrency, ack, floor });
  }
  printTable(
    `Async ack of a 12 MP photo (${(photo.length / 1024 / 1024).toFixed(1)} MB JPEG), against the floor server ` +
      '(multipart + one INSERT of the bytes in a transaction, 202) at the same concurrency',
    [
      ['concurrency', ...againstColumns('ack', 'floor')],
      ...rows.map(({ concurrency, ack, floor }) => [concurrency, ...against(ack, floor)]),
    ],
  );
  return { photoBytes: photo.length, rows };
}

/** A 12 MP phone photo (4032 × 3024 stored, EXIF orientation 6) made from the first Toloka photo. */
async function twelveMegapixelPhoto(): Promise<Buffer | undefined> {
  const [source] = await datasetPhotos('toloka', 1);
  return source === undefined ? undefined : phoneLikePhoto(source, 3024, 4032);
}

/**
 * Runs `operation` `warmup` times, then `requests` times, `concurrency` at a time; each call
 * resolves to its own latency in ms. Throughput is measured requests over the measured wall time.
 */
async function measure(
  operation: () => Promise<number>,
  concurrency: number,
  requests: number,
  warmup: number,
): Promise<Stats> {
  const run = async (count: number) => {
    const samples: number[] = [];
    let started = 0;
    const client = async () => {
      while (started < count) {
        started++;
        samples.push(await operation());
      }
    };
    await Promise.all(Array.from({ length: concurrency }, client));
    return samples;
  };
  await run(warmup);
  const startedAt = performance.now();
  const samples = await run(requests);
  const seconds = (performance.now() - startedAt) / 1000;
  return {
    concurrency,
    requests,
    p50Ms: percentile(samples, 50),
    p99Ms: percentile(samples, 99),
    requestsPerSecond: requests / seconds,
    samplesMs: samples.map((sample) => Math.round(sample * 100) / 100),
  };
}

/**
 * `measure` for several operations compared with each other, taken in turns of a few requests
 * each, so that a shared machine's changing load falls on all of them alike.
 */
async function measureInterleaved(
  operations: Array<() => Promise<number>>,
  concurrency: number,
  requests: number,
  warmup: number,
): Promise<Stats[]> {
  const TURNS = 8;
  const turns = Array.from(
    { length: TURNS },
    (_, turn) => Math.floor((requests * (turn + 1)) / TURNS) - Math.floor((requests * turn) / TURNS),
  );
  const measured = operations.map(() => ({ samples: [] as number[], seconds: 0 }));
  for (const [turn, count] of turns.entries()) {
    for (const [index, operation] of operations.entries()) {
      const stats = await measure(operation, concurrency, count, turn === 0 ? warmup : 0);
      measured[index].samples.push(...stats.samplesMs);
      measured[index].seconds += count / stats.requestsPerSecond;
    }
  }
  return measured.map(({ samples, seconds }) => ({
    concurrency,
    requests,
    p50Ms: percentile(samples, 50),
    p99Ms: percentile(samples, 99),
    requestsPerSecond: requests / seconds,
    samplesMs: samples,
  }));
}

/** The synthetic meter photo at 1600 px wide: about 50 KB, the size of a phone photo after the app shrinks it. */
async function benchPhoto(): Promise<Buffer> {
  return sharp(await renderMeterPhoto())
    .resize({ width: 1600 })
    .jpeg({ quality: 90 })
    .toBuffer();
}

/** Indexes reading.completed webhooks by reference_id as they arrive. */
function webhookArrivals(receiver: Awaited<ReturnType<typeof startWebhookReceiver>>) {
  const arrivedAt = new Map<string, number>();
  let indexed = 0;
  const index = () => {
    for (; indexed < receiver.received.length; indexed++) {
      const webhook = receiver.received[indexed];
      const payload = JSON.parse(webhook.body);
      if (payload.event === 'reading.completed') arrivedAt.set(payload.data.reference_id, webhook.receivedAt);
      else throw new Error(`unexpected webhook: ${webhook.body}`);
    }
  };
  const nextWebhook = (timeoutMs: number) =>
    Promise.race([
      receiver.waitFor(receiver.received.length + 1),
      sleep(timeoutMs, undefined, { ref: false }).then(() => {
        throw new Error(`no webhook for ${timeoutMs / 1000} s; ${arrivedAt.size} arrived so far`);
      }),
    ]);
  return {
    async arrivalOf(referenceId: string): Promise<number> {
      for (index(); !arrivedAt.has(referenceId); index()) await nextWebhook(30_000);
      return arrivedAt.get(referenceId)!;
    },
  };
}

/** `meterlens serve` (web and worker) as a child process, its output in bench/results/service.log. */
function startService(databaseUrl: string, openaiUrl: string): Promise<Child> {
  return startChild('service', [path.join('src', 'cli.ts'), 'serve'], serviceEnv(databaseUrl, openaiUrl));
}

function serviceEnv(databaseUrl: string, openaiUrl: string): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    READER_CHAIN: 'openai',
    OPENAI_BASE_URL: openaiUrl,
    OPENAI_API_KEY: 'bench',
    WEBHOOK_ALLOW_PRIVATE: '1',
    LOG_LEVEL: 'warn',
  };
}

function rate(stats: Stats): string {
  return stats.requestsPerSecond.toFixed(0);
}

/** Column heads of `against`: the subject's latency and rate, the baseline's, then their ratios. */
function againstColumns(subject: string, baseline: string): string[] {
  const stats = (name: string) => [`${name} p50 ms`, `${name} p99 ms`, `${name} req/s`];
  return [...stats(subject), ...stats(baseline), 'p50 ×', 'p99 ×', 'req/s ×'];
}

function against(subject: Stats, baseline: Stats): string[] {
  const stats = (of: Stats) => [ms(of.p50Ms), ms(of.p99Ms), rate(of)];
  return [
    ...stats(subject),
    ...stats(baseline),
    ratio(subject.p50Ms, baseline.p50Ms),
    ratio(subject.p99Ms, baseline.p99Ms),
    ratio(subject.requestsPerSecond, baseline.requestsPerSecond),
  ];
}

function ratio(value: number, baseline: number): string {
  return `${(value / baseline).toFixed(2)}×`;
}
