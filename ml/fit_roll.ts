// Experiment (issue #15, taken out again): does the last wheel's roll tell misreads the calibration cannot?
//   ROLLS_ONNX=$PWD/.pack/rolls.onnx node ml/fit_roll.ts /tmp/cache-roll [roll|mid|logroll]
import { isExact, selectiveAccuracy } from '../src/eval/metrics.ts';
import { calibrationFeatures, type ConfidenceEvidence } from '../src/readers/local/confidence.ts';
import { fitLogisticNonNegative, outOfFoldProbabilities, predictLogistic } from './logistic.ts';
import { CALIBRATING_MODELS, SHIPPED_MODELS, readSplit, type EvidenceCase } from './read_splits.ts';

const cache = process.argv[2]!;
const form = process.argv[3] ?? 'roll';
type E = ConfidenceEvidence & { lastWheelRoll: number; rollTenths: number[] };
const cal = (await readSplit('calibration', CALIBRATING_MODELS, cache)).filter((c) => c.evidence);
const val = await readSplit('val', SHIPPED_MODELS, cache);
const layouts = ['ddddd'];
function rollFeature(e: E): number[] {
  if (form === 'roll') return [1 - e.lastWheelRoll];
  if (form === 'mid') return [1 - (e.rollTenths[3]! + e.rollTenths[4]! + e.rollTenths[5]! + e.rollTenths[6]! + e.rollTenths[7]!)];
  if (form === 'logroll') return [-Math.log(Math.max(0.05, e.lastWheelRoll))];
  return [];
}
const base = (e: E) => [...calibrationFeatures(e), ...layouts.map((l) => (e.layout === l ? 1 : 0))];
const withRoll = (e: E) => [...calibrationFeatures(e), ...rollFeature(e), ...layouts.map((l) => (e.layout === l ? 1 : 0))];
const outcomes: number[] = cal.map((c) => (isExact(c) ? 1 : 0));
const fit = (rows: number[][], o: number[]) => fitLogisticNonNegative(rows, o, 0.01, layouts.length);
for (const [name, feat] of [
  ['base', base],
  ['with roll', withRoll],
] as const) {
  const rows = cal.map((c) => feat(c.evidence as E));
  const model = fit(rows, outcomes);
  const losses = [1, 2, 3, 4, 5].map((seed) => {
    const p = outOfFoldProbabilities(rows, outcomes, fit, 10, seed);
    const oof = cal.map((c, i) => ({ ...c, confidence: Math.round(100 * p[i]!) }));
    const ll = -outcomes.reduce((s, o, i) => s + Math.log(Math.min(1 - 1e-6, Math.max(1e-6, o ? p[i]! : 1 - p[i]!))), 0) / outcomes.length;
    const wrong90 = oof.filter((c) => c.confidence >= 90 && !isExact(c)).length;
    return `${ll.toFixed(3)} (wrong≥90 ${wrong90})`;
  });
  console.log(`${name}: weights ${model.weights.map((w) => w.toFixed(3)).join(' ')} bias ${model.bias.toFixed(3)}; cv ${losses.join(', ')}`);
  for (const ds of ['toloka', 'bdci2020']) {
    const v = val
      .filter((c) => c.dataset === ds)
      .map((c) => ({ ...c, confidence: c.evidence ? Math.round(100 * predictLogistic(model, feat(c.evidence as E))) : 0 }));
    const at = (t: number) => {
      const s = selectiveAccuracy(v, t);
      return `${t}: ${(100 * (s.accuracy ?? 0)).toFixed(1)}% of ${(100 * s.coverage).toFixed(1)}%`;
    };
    const wrong = v
      .filter((c) => c.confidence >= 80 && !isExact(c))
      .map((c) => `${c.predicted}@${c.confidence}(roll ${((c.evidence as E).lastWheelRoll).toFixed(2)})`);
    console.log(`  val ${ds}: ${at(90)}, ${at(95)}, ${at(97)}, ${at(99)}; wrong ≥80: ${wrong.join(' ')}`);
  }
}
const rolls = (cs: EvidenceCase[]) => cs.map((c) => (c.evidence as E).lastWheelRoll);
const m = (xs: number[]) => (xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(3);
console.log(`mean roll: cal exact ${m(rolls(cal.filter(isExact)))}, cal wrong ${m(rolls(cal.filter((c) => !isExact(c))))}`);
const bins = [0, 0.2, 0.4, 0.6, 0.8, 1.01];
for (const [split, cases] of [
  ['calibration', cal],
  ['val', val.filter((c) => c.evidence)],
] as const)
  for (const ds of ['toloka', 'bdci2020']) {
    const rows = cases.filter((c) => c.dataset === ds);
    const counts = bins.slice(0, -1).map((low, i) => {
      const inBin = rows.filter((c) => (c.evidence as E).lastWheelRoll >= low && (c.evidence as E).lastWheelRoll < bins[i + 1]!);
      return `${low.toFixed(1)}: ${inBin.filter(isExact).length} of ${inBin.length}`;
    });
    console.log(`exact by roll, ${split} ${ds}: ${counts.join(', ')}`);
  }
