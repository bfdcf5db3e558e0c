import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import t from 'tap';
import { DecodeQueue, IMAGE_WORK_SLOTS, normaliseImage } from '../src/images.ts';

const LIMITS = { maxPixels: 50_000_000, longSide: 1600 };

async function gif(side: number): Promise<Buffer> {
  return sharp({ create: { width: side, height: side, channels: 3, background: '#808080' } })
    .gif()
    .toBuffer();
}

t.test(
  'a normalised upload leaves nothing in libvips’s cache, where its decoded frame would stay resident',
  async (t) => {
    const normalised = await normaliseImage(await gif(2000), LIMITS);
    t.equal(normalised.width, 1600);
    t.equal(sharp.cache().items.current, 0);
  },
);

t.test(`a burst of uploads is decoded at most ${IMAGE_WORK_SLOTS} at a time`, async (t) => {
  const upload = await gif(3000);
  let most = 0;
  const sampler = setInterval(() => (most = Math.max(most, sharp.counters().process)), 1);
  try {
    const normalised = await Promise.all(Array.from({ length: 8 }, () => normaliseImage(upload, LIMITS)));
    t.equal(normalised.length, 8);
  } finally {
    clearInterval(sampler);
  }
  t.ok(most >= 1, 'the sampler saw the decodes');
  t.ok(most <= IMAGE_WORK_SLOTS, `at most ${most} at once`);
});

t.test('the decode queue: at most its slots at once, together at most the pixel budget, in order', async (t) => {
  const MP = 1_000_000;
  /** Runs tasks of these sizes through one queue at once; what ran together, and in which order they started. */
  async function burst(slots: number, sizes: number[]) {
    const queue = new DecodeQueue(slots);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    await Promise.all(
      sizes.map((pixels, index) =>
        queue.run(pixels, 50 * MP, async () => {
          started.push(index);
          most = Math.max(most, ++running);
          await sleep(5);
          running -= 1;
        }),
      ),
    );
    return { most, started };
  }
  t.equal((await burst(4, Array(6).fill(10 * MP))).most, 4, 'small images: as many as the slots');
  t.equal((await burst(4, Array(4).fill(20 * MP))).most, 2, 'larger ones: as many as fit in the budget');
  t.equal((await burst(4, Array(3).fill(50 * MP))).most, 1, 'images at the pixel limit: one at a time');
  t.same(
    await burst(4, [10 * MP, 45 * MP, 10 * MP]),
    { most: 1, started: [0, 1, 2] },
    'one that does not fit yet is not passed over',
  );
  t.equal((await burst(4, [60 * MP, 10 * MP])).most, 1, 'one over the budget runs alone');
});
