// Experiment (issue #15): does PP-OCRv4's reading of the chosen window tell misreads the calibration cannot?
//   PADDLE_CHECK=1 node ml/fit_paddle.ts /tmp/cache-paddle [fit]
// Without `fit`, the validation split's misreads beside PP-OCR's digits; with it, the calibration fitted with each feature.
import { isExact, selectiveAccuracy } from '../src/eval/metrics.ts';
import { calibrationFeatures, logitOf, type ConfidenceEvidence } from '../src/readers/local/confidence.ts';
import { fitLogisticNonNegative, outOfFoldProbabilities, predictLogistic } from './logistic.ts';
import { CALIBRATING_MODELS, SHIPPED_MODELS, readSplit } from './read_splits.ts';

const cache = process.argv[2]!;
type E = ConfidenceEvidence & { paddleText: string; paddleLast: number; paddleWeakest: number; paddleMatches: number; paddleLastTop: number };
const val = await readSplit('val', SHIPPED_MODELS, cache);
const m = (xs: number[]) => (xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)).toFixed(2);
const show = (name: string, cs: typeof val) => {
  for (const ds of ['toloka', 'bdci2020']) {
    const t = cs.filter((c) => c.evidence && c.dataset === ds);
    for (const k of ['paddleLast', 'paddleWeakest', 'paddleMatches'] as const)
      console.log(
        `${name} ${ds} ${k}: exact ${m(t.filter(isExact).map((c) => (c.evidence as E)[k]))}, wrong ${m(t.filter((c) => !isExact(c)).map((c) => (c.evidence as E)[k]))}`,
      );
  }
};
show('val', val);
for (const c of val.filter((c) => c.evidence && !isExact(c))) {
  const e = c.evidence as E;
  console.log(
    `  ${c.predicted}@${c.confidence} vs ${c.accepted[0]}: paddle ${e.paddleText} last ${e.paddleLast.toFixed(0)} weakest ${e.paddleWeakest.toFixed(0)} matches ${e.paddleMatches.toFixed(2)}`,
  );
}
if (process.argv[3] !== 'fit') process.exit(0);
const cal = (await readSplit('calibration', CALIBRATING_MODELS, cache)).filter((c) => c.evidence);
show('cal', cal);
const layouts = [...new Set(cal.map((c) => c.evidence!.layout))].filter((l) => l !== 'ddddd.ddd');
const extra: Record<string, (e: E) => number[]> = {
  base: () => [],
  last: (e) => [logitOf(e.paddleLast)],
  weakest: (e) => [logitOf(e.paddleWeakest)],
  matches: (e) => [e.paddleMatches],
  notSurelyOther: (e) => [e.paddleLast < 50 && e.paddleLastTop >= 80 ? 0 : 1],
  notSurelyOther60: (e) => [e.paddleLast < 50 && e.paddleLastTop >= 60 ? 0 : 1],
  allMatch: (e) => [e.paddleMatches === 1 ? 1 : 0],
  lastAndWeakest: (e) => [logitOf(e.paddleLast), logitOf(e.paddleWeakest)],
};
const outcomes: number[] = cal.map((c) => (isExact(c) ? 1 : 0));
const fit = (rows: number[][], o: number[]) => fitLogisticNonNegative(rows, o, 0.01, layouts.length);
for (const [name, f] of Object.entries(extra)) {
  const feat = (e: E) => [...calibrationFeatures(e), ...f(e), ...layouts.map((l) => (e.layout === l ? 1 : 0))];
  const rows = cal.map((c) => feat(c.evidence as E));
  const model = fit(rows, outcomes);
  const losses = [1, 2, 3, 4, 5].map((seed) => {
    const p = outOfFoldProbabilities(rows, outcomes, fit, 10, seed);
    const ll = -outcomes.reduce((s, o, i) => s + Math.log(Math.min(1 - 1e-6, Math.max(1e-6, o ? p[i]! : 1 - p[i]!))), 0) / outcomes.length;
    const wrong90 = cal.filter((c, i) => 100 * p[i]! >= 90 && !isExact(c)).length;
    return `${ll.toFixed(3)}/${wrong90}`;
  });
  console.log(`${name}: w ${model.weights.map((w) => w.toFixed(2)).join(' ')} b ${model.bias.toFixed(2)}; cv ${losses.join(' ')}`);
  for (const ds of ['toloka', 'bdci2020']) {
    const v = val
      .filter((c) => c.dataset === ds)
      .map((c) => ({ ...c, confidence: c.evidence ? Math.round(100 * predictLogistic(model, feat(c.evidence as E))) : 0 }));
    const at = (t: number) => {
      const s = selectiveAccuracy(v, t);
      return `${t}: ${(100 * (s.accuracy ?? 0)).toFixed(1)}% of ${(100 * s.coverage).toFixed(1)}%`;
    };
    const wrong = v.filter((c) => c.confidence >= 80 && !isExact(c)).map((c) => `${c.predicted}@${c.confidence}`);
    console.log(`  val ${ds}: ${at(90)}, ${at(97)}; wrong ≥80: ${wrong.join(' ')}`);
  }
}
