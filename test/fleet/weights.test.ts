import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_MODEL_DIR, NONCOMMERCIAL_MODEL_DIR } from '../../src/config.ts';
import { fineTunesOf, requireCheckpoints } from '../../src/fleet/weights.ts';
import { PROVENANCE_FILE } from '../../src/readers/local/provenance.ts';

t.test("a set built on PP-OCRv4's networks is fine-tuned from its ONNX files", async (t) => {
  const fineTunes = fineTunesOf(DEFAULT_MODEL_DIR);
  t.same(
    fineTunes.map(({ init }) => init),
    ['localiser-1.onnx', 'localiser-2.onnx', 'reader-1.onnx', 'reader-2.onnx', 'reader-3.onnx'],
  );
  t.same(fineTunes[1]!.command, ['train_localiser.py', '--detector', '--train-after', 'p2o.Add.147', '--seed', '2']);
  t.same(fineTunes[4]!.command, ['ppocr_reader.py', 'train', '--train-after', 'p2o.Add.199', '--seed', '3']);
  t.doesNotThrow(() => requireCheckpoints(DEFAULT_MODEL_DIR, fineTunes), 'it needs no checkpoints');
});

t.test(
  "the recipe's own networks start from their checkpoints, which the non-commercial set does not carry",
  async (t) => {
    const fineTunes = fineTunesOf(NONCOMMERCIAL_MODEL_DIR);
    t.same(
      fineTunes.map(({ init }) => init),
      ['localiser-1.pt', 'localiser-2.pt', 'reader-1.pt', 'reader-2.pt', 'reader-3.pt'],
    );
    t.same(fineTunes[4]!.command, [
      'train_reader.py',
      '--seed',
      '1',
      '--regularisation',
      'strong',
      '--sequence',
      'conv',
    ]);
    t.throws(() => requireCheckpoints(NONCOMMERCIAL_MODEL_DIR, fineTunes), {
      kind: 'refused',
      message: /carry no PyTorch checkpoints beside their ONNX files/,
    });
  },
);

t.test('a set built on PP-OCRv4 without one of its ONNX files stops before any work, naming it', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'meterlens-weights-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await copyFile(path.join(DEFAULT_MODEL_DIR, PROVENANCE_FILE), path.join(dir, PROVENANCE_FILE));
  for (const file of ['localiser-1.onnx', 'localiser-2.onnx', 'reader-1.onnx', 'reader-2.onnx'])
    await writeFile(path.join(dir, file), '');
  t.throws(() => requireCheckpoints(dir, fineTunesOf(dir)), {
    kind: 'refused',
    message: /the weights in \S+ carry no reader-3\.onnx, and a fine-tune starts from them/,
  });
});
