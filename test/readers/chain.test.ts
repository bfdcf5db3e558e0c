import sharp from 'sharp';
import t, { type Test } from 'tap';
import { loadConfig } from '../../src/config.ts';
import { ReadFailure, ReaderChain } from '../../src/readers/chain.ts';
import { IMPLAUSIBLE_CONFIDENCE_CAP } from '../../src/plausibility-policy.ts';
import { judgeReading } from '../../src/readers/judge-reading.ts';
import type { MeterReader } from '../../src/readers/reader.ts';
import { createReaderChain } from '../../src/readers/registry.ts';
import { startFakeAnthropic } from '../fakes/anthropic-server.ts';
import type { FakeBehaviour } from '../fakes/http-fake.ts';
import { renderMeterPhoto } from '../fakes/meter-photo.ts';
import { startFakeOpenAI } from '../fakes/openai-server.ts';

const photo = await renderMeterPhoto();

/**
 * openai first, anthropic second, each a loopback fake of its API, both held to a threshold of 80 unless `env` says
 * otherwise.
 */
async function twoReaderChain(t: Test, first: FakeBehaviour, second: FakeBehaviour, env: Record<string, string> = {}) {
  const openai = await startFakeOpenAI(first);
  const anthropic = await startFakeAnthropic(second);
  t.teardown(() => Promise.all([openai.close(), anthropic.close()]));
  const chain = await createReaderChain(
    loadConfig({
      READER_CHAIN: 'openai,anthropic',
      OPENAI_BASE_URL: openai.url,
      OPENAI_API_KEY: 'sk-test',
      OPENAI_MODEL: 'gpt-test',
      ANTHROPIC_BASE_URL: anthropic.url,
      ANTHROPIC_API_KEY: 'sk-ant-test',
      ANTHROPIC_MODEL: 'claude-test',
      READER_RETRIES: '0',
      READER_TIMEOUT_MS: '2000',
      HOSTED_ESCALATE_BELOW: '80',
      ...env,
    }),
  );
  return { chain, openai, anthropic };
}

t.test('the first confident reader answers; later ones are not asked', async (t) => {
  const { chain, anthropic } = await twoReaderChain(t, {}, {});
  const result = await chain.read(photo);
  t.match(result, {
    reading: '02390.276',
    value: 2390.276,
    confidence: 97,
    reader: 'openai',
    model: 'gpt-test',
    escalated: false,
  });
  t.match(result.attempts, [{ reader: 'openai', outcome: 'accepted', confidence: 97 }]);
  t.equal(anthropic.requests.length, 0);
});

t.test('a failing first reader falls back to the next, which is marked escalated', async (t) => {
  const { chain } = await twoReaderChain(
    t,
    { status: 500 },
    { answer: { reading: '00758.407', confidence: 91, unobstructed: true } },
  );
  const result = await chain.read(photo);
  t.match(result, { reading: '00758.407', reader: 'anthropic', model: 'claude-test', escalated: true });
  t.match(result.attempts, [
    { reader: 'openai', outcome: 'unavailable' },
    { reader: 'anthropic', outcome: 'accepted' },
  ]);
});

t.test('a timed-out reader falls back to the next', async (t) => {
  const { chain } = await twoReaderChain(t, { delayMs: 5000 }, {}, { READER_TIMEOUT_MS: '200' });
  const result = await chain.read(photo);
  t.match(result, { reader: 'anthropic', escalated: true });
  t.match(result.attempts[0], { reader: 'openai', outcome: 'unavailable', error: /timed out|timeout|abort/i });
});

t.test('an unparseable answer falls back to the next', async (t) => {
  const { chain } = await twoReaderChain(t, { answer: 'I think it says about two thousand' }, {});
  const result = await chain.read(photo);
  t.match(result, { reader: 'anthropic', escalated: true });
  t.equal(result.attempts[0].outcome, 'unparseable');
});

t.test('low confidence escalates; if no reader is confident, the most confident answer stands', async (t) => {
  const escalated = await twoReaderChain(
    t,
    { answer: { reading: '02390.276', confidence: 40, unobstructed: true } },
    {},
  );
  t.match(await escalated.chain.read(photo), { reader: 'anthropic', confidence: 97, escalated: true });

  const bothUnsure = await twoReaderChain(
    t,
    { answer: { reading: '02390.276', confidence: 60, unobstructed: true } },
    { answer: { reading: '02390.278', confidence: 45, unobstructed: true } },
  );
  const result = await bothUnsure.chain.read(photo);
  t.match(result, { reading: '02390.276', confidence: 60, reader: 'openai', escalated: false });
  t.match(result.attempts, [{ outcome: 'low_confidence' }, { outcome: 'low_confidence' }]);
});

t.test("by default a hosted answer is held to 95, any other reader's (the calibrated local one) to 97", async (t) => {
  const { chain, anthropic } = await twoReaderChain(
    t,
    { answer: { reading: '02390.276', confidence: 95, unobstructed: true } },
    {},
    { HOSTED_ESCALATE_BELOW: '' },
  );
  t.match(await chain.read(photo), { reader: 'openai', confidence: 95, escalated: false });
  t.equal(anthropic.requests.length, 0, 'a hosted 95 does not buy a second hosted answer');

  const calibrated: MeterReader = {
    name: 'calibrated',
    read: async () => ({ reading: '02390.270', value: 2390.27, confidence: 96, model: 'm', raw: null }),
  };
  const escalated = await new ReaderChain([calibrated, ...chain.readers], loadConfig({})).read(photo);
  t.match(
    escalated,
    { reader: 'openai', reading: '02390.276', confidence: 95, escalated: true },
    'the accepted answer stands, not the more confident one it was asked after',
  );
  t.match(escalated.attempts, [
    { reader: 'calibrated', outcome: 'low_confidence', confidence: 96 },
    { reader: 'openai', outcome: 'accepted', confidence: 95 },
  ]);
  t.equal(anthropic.requests.length, 0);
});

t.test('when no reader can be reached the failure says so; when they looked, it is unreadable', async (t) => {
  const down = await twoReaderChain(t, { status: 503 }, { status: 529 });
  await t.rejects(down.chain.read(photo), {
    name: 'ReadFailure',
    code: 'readers_unavailable',
    message: /No reader could be reached/,
  });

  const blind = await twoReaderChain(
    t,
    { answer: { reading: '', confidence: 0, unobstructed: false } },
    { status: 500 },
  );
  const failure = await blind.chain.read(photo).catch((error: unknown) => error);
  t.ok(failure instanceof ReadFailure);
  t.match(failure, { code: 'unreadable', attempts: [{ outcome: 'unreadable' }, { outcome: 'unavailable' }] });
});

t.test('the default chain: no local weights and no API keys means no reader, reported as unavailable', async (t) => {
  const chain = await createReaderChain(loadConfig({ LOCAL_MODEL_DIR: '/nonexistent' }));
  t.same(chain.readers, []);
  await t.rejects(chain.read(photo), { code: 'readers_unavailable', message: /No reader is configured/ });
});

t.test('the default chain adds each hosted reader whose key is set, in order', async (t) => {
  const chain = await createReaderChain(
    loadConfig({ LOCAL_MODEL_DIR: '/nonexistent', OPENAI_API_KEY: 'sk', ANTHROPIC_API_KEY: 'sk-ant' }),
  );
  t.same(
    chain.readers.map((reader) => reader.name),
    ['openai', 'anthropic'],
  );
});

t.test('READER_CHAIN must name known, available readers', async (t) => {
  await t.rejects(
    createReaderChain(loadConfig({ READER_CHAIN: 'openai,gemini', OPENAI_API_KEY: 'sk' })),
    /unknown reader "gemini"/,
  );
  await t.rejects(
    createReaderChain(loadConfig({ READER_CHAIN: 'local', LOCAL_MODEL_DIR: '/nonexistent' })),
    /"local", which is not available/,
  );
});

t.test('without a window every reading is of unknown plausibility', async (t) => {
  const { chain } = await twoReaderChain(t, {}, {});
  t.match(await chain.read(photo), { reading: '02390.276', plausibility: 'unknown' });
});

/** The window after a reading of 02400.000: 02390.276 (the fakes' default answer) is below it. */
const afterTwoThousandFourHundred = { reference: '02400.000', min: 2399.99, max: 2460 };

t.test('a hosted reading inside the window is ok', async (t) => {
  const { chain } = await twoReaderChain(
    t,
    { answer: { reading: '02401.500', confidence: 97, unobstructed: true } },
    {},
  );
  const result = await chain.read(photo, undefined, afterTwoThousandFourHundred);
  t.match(result, { reading: '02401.500', confidence: 97, plausibility: 'ok', reader: 'openai' });
  t.notOk(result.plausibilityReason);
});

t.test(
  'a confident hosted reading outside the window is implausible: capped, and the next reader is asked',
  async (t) => {
    const { chain, anthropic } = await twoReaderChain(
      t,
      {},
      { answer: { reading: '02401.500', confidence: 91, unobstructed: true } },
    );
    const result = await chain.read(photo, undefined, afterTwoThousandFourHundred);
    t.equal(anthropic.requests.length, 1);
    t.match(result, { reading: '02401.500', plausibility: 'ok', reader: 'anthropic', escalated: true });
    t.match(result.attempts, [
      { reader: 'openai', outcome: 'implausible', confidence: IMPLAUSIBLE_CONFIDENCE_CAP },
      { reader: 'anthropic', outcome: 'accepted' },
    ]);
  },
);

t.test(
  'a plausible answer beats a more confident implausible one; if all are implausible the best stands, flagged',
  async (t) => {
    const unsure = await twoReaderChain(
      t,
      { answer: { reading: '02402.100', confidence: 60, unobstructed: true } },
      { answer: { reading: '02990.100', confidence: 99, unobstructed: true } },
    );
    t.match(await unsure.chain.read(photo, undefined, afterTwoThousandFourHundred), {
      reading: '02402.100',
      confidence: 60,
      plausibility: 'ok',
    });

    const bothOutside = await twoReaderChain(
      t,
      {},
      { answer: { reading: '02990.100', confidence: 99, unobstructed: true } },
    );
    const flagged = await bothOutside.chain.read(photo, undefined, afterTwoThousandFourHundred);
    t.match(flagged, {
      reading: '02390.276',
      confidence: IMPLAUSIBLE_CONFIDENCE_CAP,
      plausibility: 'implausible',
      reader: 'openai',
    });
    t.match(flagged.plausibilityReason, /02390\.276 is below the reference reading 02400\.000/);
    t.match(flagged.attempts, [{ outcome: 'implausible' }, { outcome: 'implausible' }]);
    const above = judgeReading(
      { reading: '02990.100', value: 2990.1, confidence: 99, model: 'm', raw: null },
      afterTwoThousandFourHundred,
    );
    t.match(
      above.plausibilityReason,
      /more than the meter can have run since the reference reading 02400\.000 \(at most 2460 m³\)/,
    );
  },
);

t.test(
  "a hosted answer in another layout than the meter's is implausible: capped, explained, and the next reader is asked",
  async (t) => {
    const fiveAndThree = { whole: 5, fraction: 3, shownBy: '02389.100' };
    const { chain, anthropic } = await twoReaderChain(
      t,
      { answer: { reading: '02390', confidence: 99, unobstructed: true } },
      {},
    );
    const result = await chain.read(photo, undefined, undefined, fiveAndThree);
    t.equal(anthropic.requests.length, 1);
    t.match(result, { reading: '02390.276', plausibility: 'unknown', reader: 'anthropic', escalated: true });
    t.match(result.attempts, [
      { reader: 'openai', outcome: 'implausible', confidence: IMPLAUSIBLE_CONFIDENCE_CAP },
      { reader: 'anthropic', outcome: 'accepted' },
    ]);

    const bothOther = await twoReaderChain(
      t,
      { answer: { reading: '02390', confidence: 99, unobstructed: true } },
      { answer: { reading: '002390.276', confidence: 98, unobstructed: true } },
    );
    const flagged = await bothOther.chain.read(photo, undefined, afterTwoThousandFourHundred, {
      whole: 5,
      fraction: 3,
    });
    t.match(flagged, { plausibility: 'implausible', confidence: IMPLAUSIBLE_CONFIDENCE_CAP });
    t.match(
      flagged.plausibilityReason,
      /^(02390 has 5 whole and 0|002390\.276 has 6 whole and 3) fractional wheels; the meter has 5 and 3 \(as set for the meter\)$/,
    );
    t.match(
      judgeReading(
        { reading: '2401.5', value: 2401.5, confidence: 99, model: 'm', raw: null },
        afterTwoThousandFourHundred,
        fiveAndThree,
      ),
      {
        plausibility: 'implausible',
        plausibilityReason: '2401.5 has 4 whole and 1 fractional wheels; the meter has 5 and 3 (as 02389.100 shows)',
      },
      'inside the window, but with a fractional wheel where the meter has three',
    );
    t.match(
      judgeReading(
        { reading: '2401.500', value: 2401.5, confidence: 99, model: 'm', raw: null },
        afterTwoThousandFourHundred,
        fiveAndThree,
      ),
      { plausibility: 'ok', confidence: 99 },
      'its leading zero dropped, a reading is in the layout',
    );
  },
);

t.test('the reader chain measures the frame of the image it read when the reading has a counter box', async (t) => {
  const image = await sharp({ create: { width: 640, height: 480, channels: 3, background: '#888' } })
    .jpeg()
    .toBuffer();
  const boxed: MeterReader = {
    name: 'boxed',
    read: async () => ({
      reading: '1',
      value: 1,
      confidence: 99,
      model: 'm',
      raw: null,
      counterBox: [
        [1, 1],
        [9, 1],
        [9, 9],
        [1, 9],
      ],
    }),
  };
  const chain = new ReaderChain([boxed], {
    escalateBelow: 80,
    hostedEscalateBelow: 80,
    readerTimeoutMs: 1000,
    readerRetries: 0,
  });
  t.same((await chain.read(image)).frame, { width: 640, height: 480 });
});
