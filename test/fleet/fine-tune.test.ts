import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_MODEL_DIR, loadConfig } from '../../src/config.ts';
import { DEFAULT_PYTHON, fineTune } from '../../src/fleet/fine-tune.ts';
import { checkpointOf, fineTunesOf, OWN_PHOTOS, TRAINING_FILE, type Training } from '../../src/fleet/weights.ts';
import { createLocalReader } from '../../src/readers/local.ts';
import { licenceLine, PROVENANCE_FILE, type Provenance } from '../../src/readers/local/provenance.ts';
import { ROLLING_FILE } from '../../src/readers/local/rolling.ts';
import { cannotFineTune, heldBackByName, writeDrawnPhotos, writePlaceholderCheckpoints } from '../helpers/fleet.ts';
import { LOCALISER_FILES, READER_FILES } from '../../src/readers/local/spec.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '..', '..');
const scratch = await mkdtemp(path.join(tmpdir(), 'meterlens-fine-tune-'));
t.teardown(() => rm(scratch, { recursive: true, force: true }));
const config = loadConfig({});

/** A base set that carries checkpoints: empty files, enough for the checks that run before Python. */
async function placeholderBase(): Promise<string> {
  const base = await mkdtemp(path.join(scratch, 'base-'));
  await writePlaceholderCheckpoints(base);
  return base;
}

/** Four drawn meters as an operator's labelled photos: three to learn from and one held back, by their names' hash. */
async function drawnFleet(folder: string): Promise<{ photos: string; chosen: string[] }> {
  const names = Array.from({ length: 40 }, (_, index) => `meter-${index}.jpg`);
  const chosen = [
    ...names.filter(heldBackByName).slice(0, 1),
    ...names.filter((name) => !heldBackByName(name)).slice(0, 3),
  ];
  const photos = path.join(scratch, folder);
  await writeDrawnPhotos(
    photos,
    chosen.map((file, index) => ({ file, reading: `0${index}758.407` })),
  );
  return { photos, chosen };
}

const run = (python: string, base: string, photos = path.join(scratch, 'none')) =>
  fineTune({ base, photos, work: path.join(scratch, `work-${path.basename(base)}`), minutes: 0.05, python }, () => {});

t.test('no Python there: a clear stop', async (t) => {
  await t.rejects(run('/nonexistent/python3', await placeholderBase()), {
    kind: 'unavailable',
    message: /^no \/nonexistent\/python3: training needs Python 3 with the packages of ml\/requirements-debian.txt/,
  });
});

t.test(
  'a Python without the packages: a clear stop naming what it lacks',
  { skip: !existsSync(DEFAULT_PYTHON) && `no ${DEFAULT_PYTHON}` },
  async (t) => {
    // The same Python without its site packages, where Debian's numpy, Pillow and torch live.
    const bare = path.join(scratch, 'bare-python3');
    await writeFile(bare, `#!/bin/sh\nexec ${DEFAULT_PYTHON} -S "$@"\n`);
    await chmod(bare, 0o755);
    await t.rejects(run(bare, await placeholderBase()), {
      kind: 'unavailable',
      message: /cannot import \w+: install the packages of ml\/requirements-debian.txt/,
    });
  },
);

t.test(
  'fine-tunes each network from its checkpoint into a candidate set, its progress shown',
  { skip: cannotFineTune() },
  async (t) => {
    // A base set of untrained networks' checkpoints (the fine-tune starts from whatever weights it is given).
    const base = path.join(scratch, 'base');
    await mkdir(base);
    const init = spawnSync(
      DEFAULT_PYTHON,
      [
        '-c',
        `import sys, torch
sys.path.insert(0, 'ml')
from train_localiser import Localiser
from train_reader import StripReader
for n in (1, 2): torch.save(Localiser().state_dict(), f'{sys.argv[1]}/localiser-{n}.pt')
for n, sequence in ((1, 'gru'), (2, 'gru'), (3, 'conv')): torch.save(StripReader(sequence).state_dict(), f'{sys.argv[1]}/reader-{n}.pt')`,
        base,
      ],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    t.equal(init.status, 0, init.stderr);
    const provenance: Provenance = {
      set: 'clean-test',
      datasets: { rendered: { name: 'rendered', licence: 'Apache-2.0', commercialUse: true } },
      files: Object.fromEntries([...LOCALISER_FILES, ...READER_FILES].map((file) => [file, ['rendered']])),
    };
    await writeFile(path.join(base, PROVENANCE_FILE), JSON.stringify(provenance));

    const { photos, chosen } = await drawnFleet('fleet');
    const lines: string[] = [];
    const work = path.join(scratch, 'work');
    const result = await fineTune({ base, photos, work, minutes: 0.05, python: DEFAULT_PYTHON }, (line) =>
      lines.push(line),
    );
    t.match(result, { candidate: path.join(work, 'candidate'), trainedOn: 3, heldBack: 1 });
    for (const { file, init } of fineTunesOf(base)) {
      t.ok(
        lines.some((line) => line === `${file}: started from ${path.join(base, init)}`),
        `${file} started from its checkpoint`,
      );
      t.ok(
        existsSync(path.join(result.candidate, checkpointOf(file))),
        `${file}'s checkpoint is in the candidate, for the next fine-tune`,
      );
    }
    for (const judged of [
      /^reader-3\.onnx: validation before: fleet exact\/orientation/,
      /^reader-3\.onnx: final validation after \d+ steps: fleet exact/,
    ]) {
      t.ok(
        lines.some((line) => judged.test(line)),
        `judged on the held-back photos: ${judged.source}`,
      );
    }

    const training = JSON.parse(await readFile(path.join(result.candidate, TRAINING_FILE), 'utf8')) as Training;
    t.match(training, { base, photos, heldBack: [chosen[0]], trainedOn: 3 });
    const written = JSON.parse(await readFile(path.join(result.candidate, PROVENANCE_FILE), 'utf8')) as Provenance;
    t.same(written.files['reader-1.onnx'], ['rendered', 'digits-clean', OWN_PHOTOS]);
    t.same(written.files['localiser-1.onnx'], ['rendered', OWN_PHOTOS]);
    t.match(
      licenceLine(written),
      /^weights clean-test\+own-\d{4}-\d\d-\d\d: learned only from data that allows commercial use$/,
    );
    t.ok(await createLocalReader({ ...config, localModelDir: result.candidate }), 'the service loads the candidate');
  },
);

t.test(
  "the default set, built on PP-OCRv4's networks, fine-tunes from its own ONNX files, without checkpoints",
  { skip: cannotFineTune() },
  async (t) => {
    const { photos } = await drawnFleet('fleet-clean');
    const lines: string[] = [];
    const work = path.join(scratch, 'work-clean');
    const result = await fineTune(
      { base: DEFAULT_MODEL_DIR, photos, work, minutes: 0.05, python: DEFAULT_PYTHON },
      (line) => lines.push(line),
    );
    const networks = [...LOCALISER_FILES, ...READER_FILES];
    for (const file of networks)
      t.ok(
        lines.some((line) => line === `${file}: started from ${path.join(DEFAULT_MODEL_DIR, file)}`),
        `${file} started from its ONNX file`,
      );
    t.ok(
      lines.some((line) => /^reader-1\.onnx: final validation after \d+ steps: fleet-clean exact/.test(line)),
      'judged on the held-back photos',
    );
    t.same(
      fineTunesOf(result.candidate).map(({ init }) => init),
      networks,
      'the candidate is fine-tuned from its own ONNX files next time',
    );
    t.notOk(existsSync(path.join(result.candidate, 'reader-1.pt')), 'so no checkpoint weighs it down');
    const written = JSON.parse(await readFile(path.join(result.candidate, PROVENANCE_FILE), 'utf8')) as Provenance;
    t.same(written.files['reader-1.onnx'], ['ppocrv4', 'rendered', 'digits-clean', OWN_PHOTOS]);
    t.same(written.files['localiser-1.onnx'], ['ppocrv4-det', 'rendered', 'digits-clean', OWN_PHOTOS]);
    t.ok(existsSync(path.join(DEFAULT_MODEL_DIR, ROLLING_FILE)));
    t.notOk(
      existsSync(path.join(result.candidate, ROLLING_FILE)),
      "the base's rolling rule stays behind: it was chosen for the base's readers",
    );
    t.ok(await createLocalReader({ ...config, localModelDir: result.candidate }), 'the service loads the candidate');
  },
);
