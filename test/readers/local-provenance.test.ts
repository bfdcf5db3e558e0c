import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_MODEL_DIR, NONCOMMERCIAL_MODEL_DIR } from '../../src/config.ts';
import { CALIBRATION_FILE } from '../../src/readers/local/confidence.ts';
import { MODEL_FILES } from '../../src/readers/local/model.ts';
import { describeWeights, licenceLine, PROVENANCE_FILE, type Provenance } from '../../src/readers/local/provenance.ts';
import { ROLLING_FILE } from '../../src/readers/local/rolling.ts';
import { WHEEL_READER_FILE } from '../../src/readers/local/spec.ts';
import { READING_EXAMPLE } from '../../src/schemas/meter-reading.ts';

const shippedDir = NONCOMMERCIAL_MODEL_DIR;
const cleanDir = DEFAULT_MODEL_DIR;
const provenanceOf = async (dir: string) =>
  (await import(path.join(dir, PROVENANCE_FILE), { with: { type: 'json' } })).default as Provenance;
const shipped = await provenanceOf(shippedDir);
/**
 * The sets of weights in the repository: the files each learned (the default set has no wheel reader nor
 * calibration), and the rules chosen for it, which learned nothing and name what chose them themselves.
 */
const SETS = [
  { dir: shippedDir, files: [...MODEL_FILES, WHEEL_READER_FILE, CALIBRATION_FILE], chosen: [] },
  { dir: cleanDir, files: MODEL_FILES, chosen: [ROLLING_FILE] },
];

t.test("each set's provenance describes every file of the set and every dataset it names", async (t) => {
  for (const { dir, files, chosen } of SETS) {
    const provenance = await provenanceOf(dir);
    t.same(Object.keys(provenance.files).sort(), [...files].sort(), dir);
    t.same(
      (await readdir(dir)).filter((file) => /\.(onnx|json)$/.test(file)).sort(),
      [...files, ...chosen, PROVENANCE_FILE].sort(),
    );
    for (const [file, datasets] of Object.entries(provenance.files)) {
      t.ok(datasets.length > 0, `${file} names what it learned from`);
      for (const id of datasets) t.ok(provenance.datasets[id]?.licence, `${file}: ${id} has a licence stated`);
    }
  }
});

t.test('the licence line says whether the weights may be used commercially', async (t) => {
  t.match(
    describeWeights(shippedDir),
    /^weights local-crnn-v20: NOT for commercial use, learned from Toloka Water Meters \(CC BY-NC-ND 4\.0\); BDCI 2020/,
  );
  t.equal(describeWeights(cleanDir), 'weights local-clean-ppocr-v7: learned only from data that allows commercial use');
  t.equal(READING_EXAMPLE.model, (await provenanceOf(cleanDir)).set, "the examples' model is the default set's");
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

t.test("each set's model card's table of weight files is its provenance.json's", async (t) => {
  for (const { dir } of SETS) {
    const provenance = await provenanceOf(dir);
    const card = await readFile(path.join(dir, 'MODEL_CARD.md'), 'utf8');
    const rows = cardRows(card, 'Weights and the data they learned from');
    const learnedFrom = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]);
    const files = [...rows].filter(([name]) => /\.\w+$/.test(name)); // a file's name has an extension, a dataset's not
    t.same(Object.fromEntries(files.map(([name, cells]) => [name, learnedFrom(cells.at(-1)!)])), provenance.files, dir);
    for (const [id, dataset] of Object.entries(provenance.datasets)) {
      t.same(
        rows.get(id)?.slice(1),
        [dataset.licence, dataset.commercialUse ? 'yes' : 'no'],
        `${dir}, ${id}: its licence as provenance.json states it`,
      );
    }
  }
});
