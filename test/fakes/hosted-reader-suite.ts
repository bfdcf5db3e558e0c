/**
 * The behaviour both hosted readers promise, run against their fake servers: each reader's test
 * file calls this with its own SDK-specific parts, then adds tests of its own wire format.
 */
import type { Test } from 'tap';
import { loadConfig, type Config } from '../../src/config.ts';
import { METER_PROMPT } from '../../src/readers/hosted.ts';
import type { MeterReader } from '../../src/readers/reader.ts';
import { DEFAULT_ANSWER, type FakeBehaviour, type FakeServer, type RecordedRequest } from './http-fake.ts';
import { renderMeterPhoto } from './meter-photo.ts';

export interface HostedReaderUnderTest {
  name: string;
  startFake(behaviour?: FakeBehaviour): Promise<FakeServer>;
  createReader(config: Config): MeterReader;
  /** Environment variables pointing the reader at `fakeUrl` with `model`, and an API key. */
  env(fakeUrl: string, model: string): Record<string, string>;
  keyVariable: string;
  /** The base64 JPEG the request carried, checked for its media type. */
  imageSent(request: RecordedRequest): string | undefined;
  /** The text the request asked the model with. */
  promptSent(request: RecordedRequest): string | undefined;
}

export const TEST_MODEL = 'meter-model-test';

export interface ReaderHarness {
  fake: FakeServer;
  image: Buffer;
  reader(settings?: { timeoutMs?: number; retries?: number }): MeterReader;
}

/** Starts a fake for one test and closes it when the test ends. */
export async function harness(
  t: Test,
  under: HostedReaderUnderTest,
  behaviour?: FakeBehaviour,
): Promise<ReaderHarness> {
  const fake = await under.startFake(behaviour);
  t.teardown(() => fake.close());
  const image = await renderMeterPhoto();
  return {
    fake,
    image,
    reader: ({ timeoutMs = 5000, retries = 0 } = {}) =>
      under.createReader(
        loadConfig({
          ...under.env(fake.url, TEST_MODEL),
          READER_TIMEOUT_MS: String(timeoutMs),
          READER_RETRIES: String(retries),
        }),
      ),
  };
}

const noAbort = () => new AbortController().signal;

export function testHostedReader(t: Test, under: HostedReaderUnderTest): void {
  t.test('reads the answer and sends the photo to the configured model', async (t) => {
    const { fake, image, reader } = await harness(t, under);
    const created = reader();
    t.equal(created.name, under.name);

    const reading = await created.read(image, noAbort());

    t.same(reading, { reading: '02390.276', value: 2390.276, confidence: 97, model: TEST_MODEL, raw: DEFAULT_ANSWER });
    t.equal(fake.requests.length, 1);
    t.equal(fake.requests[0].body.model, TEST_MODEL);
    t.equal(under.imageSent(fake.requests[0]), image.toString('base64'));
  });

  t.test("is told the meter's layout when one is known, and only then", async (t) => {
    const { fake, image, reader } = await harness(t, under);
    const window = { reference: '00100.000', min: 99.999, max: 200 };
    await reader().read(image, noAbort(), window);
    await reader().read(image, noAbort(), window, { whole: 5, fraction: 3, shownBy: '00100.000' });
    await reader().read(image, noAbort(), undefined, { whole: 6, fraction: 0 });
    await reader().read(image, noAbort(), undefined, { whole: 4, fraction: 1 });
    const [unknown, fivePlusThree, six, fourPlusOne] = fake.requests.map((request) => under.promptSent(request));
    t.equal(unknown, METER_PROMPT, 'no layout known: the prompt alone, and no window in it');
    t.equal(
      fivePlusThree,
      `${METER_PROMPT}\n\nThis meter's counter has 5 black whole-unit wheels and 3 red wheels: write 5 digits, ".", then 3 digits.`,
    );
    t.equal(
      six,
      `${METER_PROMPT}\n\nThis meter's counter has 6 black whole-unit wheels and no red wheels: write 6 digits and no ".".`,
    );
    t.match(fourPlusOne, /has 4 black whole-unit wheels and 1 red wheel: write 4 digits, "\.", then 1 digit\.$/);
    for (const prompt of [unknown, fivePlusThree]) t.notMatch(prompt, /00100|99\.999|200/, 'the window is not told');
  });

  t.test('needs no API key for a self-hosted server', async (t) => {
    const { image, fake } = await harness(t, under);
    const { [under.keyVariable]: _key, ...env } = under.env(fake.url, TEST_MODEL);
    const reading = await under.createReader(loadConfig(env)).read(image, noAbort());
    t.equal(reading.reading, DEFAULT_ANSWER.reading);
  });

  t.test('without an API key the vendor API is not even tried', async (t) => {
    t.throws(() => under.createReader(loadConfig({})), { message: new RegExp(`${under.keyVariable} is not set`) });
  });

  t.test('reports the model name the server reports', async (t) => {
    const { image, reader } = await harness(t, under, { reportedModel: 'meter-model-2026-01-01' });
    const reading = await reader().read(image, noAbort());
    t.equal(reading.model, 'meter-model-2026-01-01');
  });

  t.test('keeps leading zeros and clamps the confidence', async (t) => {
    const { image, reader } = await harness(t, under, {
      answer: { reading: '00417', confidence: 140, unobstructed: true },
    });
    const reading = await reader().read(image, noAbort());
    t.match(reading, { reading: '00417', value: 417, confidence: 100 });
  });

  t.test('an answer that is not JSON is unparseable', async (t) => {
    const { image, reader } = await harness(t, under, { answer: 'The meter reads about two thousand.' });
    await t.rejects(reader().read(image, noAbort()), { name: 'ReaderError', kind: 'unparseable' });
  });

  t.test('a reading that is not digits is unparseable', async (t) => {
    const { image, reader } = await harness(t, under, {
      answer: { reading: '2,390 m3', confidence: 90, unobstructed: true },
    });
    await t.rejects(reader().read(image, noAbort()), { name: 'ReaderError', kind: 'unparseable' });
  });

  t.test('an obstructed counter is unreadable', async (t) => {
    const { image, reader } = await harness(t, under, {
      answer: { reading: '02390', confidence: 10, unobstructed: false },
    });
    await t.rejects(reader().read(image, noAbort()), { name: 'ReaderError', kind: 'unreadable' });
  });

  t.test('an empty reading is unreadable', async (t) => {
    const { image, reader } = await harness(t, under, { answer: { reading: '', confidence: 0, unobstructed: true } });
    await t.rejects(reader().read(image, noAbort()), { name: 'ReaderError', kind: 'unreadable' });
  });

  for (const status of [500, 503, 529, 429]) {
    t.test(`HTTP ${status} is unavailable once the configured retries are spent`, async (t) => {
      const { fake, image, reader } = await harness(t, under, { status });
      await t.rejects(reader({ retries: 2 }).read(image, noAbort()), { name: 'ReaderError', kind: 'unavailable' });
      t.equal(fake.requests.length, 3);
    });
  }

  t.test('a rejected request (HTTP 401) is unavailable and not retried', async (t) => {
    const { fake, image, reader } = await harness(t, under, { status: 401 });
    await t.rejects(reader({ retries: 2 }).read(image, noAbort()), { name: 'ReaderError', kind: 'unavailable' });
    t.equal(fake.requests.length, 1);
  });

  t.test('retries a failure and then reads', async (t) => {
    const { fake, image, reader } = await harness(t, under, { status: 500, failTimes: 1 });
    const reading = await reader({ retries: 1 }).read(image, noAbort());
    t.equal(reading.reading, '02390.276');
    t.equal(fake.requests.length, 2);
  });

  t.test('a server slower than the reader timeout is unavailable', async (t) => {
    const { fake, image, reader } = await harness(t, under, { delayMs: 3000 });
    await t.rejects(reader({ timeoutMs: 200 }).read(image, noAbort()), { name: 'ReaderError', kind: 'unavailable' });
    t.equal(fake.requests.length, 1);
  });

  t.test("the caller's abort signal cancels the request", async (t) => {
    const { fake, image, reader } = await harness(t, under, { delayMs: 3000 });
    const controller = new AbortController();
    const reading = reader().read(image, controller.signal);
    await waitFor(() => fake.requests.length === 1);
    controller.abort();
    await t.rejects(reading, { name: 'ReaderError', kind: 'unavailable' });
  });

  t.test('a server that is not there is unavailable', async (t) => {
    const { fake, image, reader } = await harness(t, under);
    const unreachable = reader();
    await fake.close();
    await t.rejects(unreachable.read(image, noAbort()), { name: 'ReaderError', kind: 'unavailable' });
  });
}

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}
