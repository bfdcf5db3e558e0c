import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CALIBRATION_FILE } from '../../src/readers/local/confidence.ts';
import { MODEL_FILES } from '../../src/readers/local/model.ts';
import { describeWeights, licenceLine, PROVENANCE_FILE, type Provenance } from '../../src/readers/local/provenance.ts';
import { WHEEL_READER_FILE } from '../../src/readers/local/spec.ts';

const shippedDir = path.join(import.meta.dirname, '..', '..', 'models');
const shipped = (await import(path.join(shippedDir, PROVENANCE_FILE), { with: { type: 'json' } }))
  .default as Provenance;

t.test('the shipped provenance describes every file the reader loads and every dataset it names', async (t) => {
  t.same(Object.keys(shipped.files).sort(), [...MODEL_FILES, WHEEL_READER_FILE, CALIBRATION_FILE].sort());
  for (const [file, datasets] of Object.entries(shipped.files)) {
    t.ok(datasets.length > 0, `${file} names what it learned from`);
    for (const id of datasets) t.ok(shipped.datasets[id]?.licence, `${file}: ${id} has a licence stated`);
  }
});

t.test('the licence line says whether the weights may be used commercially', async (t) => {
  t.match(
    describeWeights(shippedDir),
    /^weights local-crnn-v20: NOT for commercial use, learned from Toloka Water Meters \(CC BY-NC-ND 4\.0\); BDCI 2020/,
  );
  const clean: Provenance = {
    set: 'clean-1',
    datasets: {
      'digits-clean': { name: 'digits-clean', licence: 'Apache-2.0, MIT', commercialUse: true },
      toloka: shipped.datasets.toloka!,
    },
    files: { 'reader-1.onnx': ['digits-clean'] },
  };
  t.equal(
    licenceLine(clean),
    'weights clean-1: learned only from data that allows commercial use',
    'a dataset described but unused does not count',
  );
  t.match(
    licenceLine({ ...clean, files: { 'reader-1.onnx': ['mystery'] } }),
    /NOT for commercial use, learned from a dataset provenance.json does not describe/,
  );

  const ownDir = await mkdtemp(path.join(tmpdir(), 'meterlens-weights-'));
  t.teardown(() => rm(ownDir, { recursive: true, force: true }));
  t.equal(describeWeights(ownDir), `weights in ${ownDir}: no provenance.json, so their licence is unknown`);
  await writeFile(path.join(ownDir, PROVENANCE_FILE), JSON.stringify(clean));
  t.match(describeWeights(ownDir), /learned only from data that allows commercial use/);
});

/** The rows of the model card's tables under `heading` whose first cell starts with a backticked name: name → cells. */
function cardRows(card: string, heading: string): Map<string, string[]> {
  const section = card.split(/^## /m).find((part) => part.startsWith(`${heading}\n`)) ?? '';
  const rows = new Map<string, string[]>();
  for (const line of section.split('\n')) {
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    const name = /^`([^`]+)`/.exec(cells[0] ?? '')?.[1];
    if (name) rows.set(name, cells);
  }
  return rows;
}

t.test("the model card's table of weight files is provenance.json's", async (t) => {
  const card = await readFile(path.join(shippedDir, 'MODEL_CARD.md'), 'utf8');
  const rows = cardRows(card, 'Weights and the data they learned from');
  const learnedFrom = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]);
  const files = [...rows].filter(([name]) => /\.\w+$/.test(name)); // a file's name has an extension, a dataset's not
  t.same(Object.fromEntries(files.map(([name, cells]) => [name, learnedFrom(cells.at(-1)!)])), shipped.files);
  for (const [id, dataset] of Object.entries(shipped.datasets)) {
    t.same(
      rows.get(id)?.slice(1),
      [dataset.licence, dataset.commercialUse ? 'yes' : 'no'],
      `${id}: its licence as provenance.json states it`,
    );
  }
});
