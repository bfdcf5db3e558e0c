import t from 'tap';
import { fitLogistic, fitLogisticNonNegative, logistic, outOfFoldProbabilities } from '../../ml/logistic.ts';

/** Outcomes of a known model, without chance: at each grid point 200 readings, the model's share of them exact. */
function sample(weights: number[], bias: number, grid: number[][]): { features: number[][]; outcomes: number[] } {
  const features: number[][] = [];
  const outcomes: number[] = [];
  for (const row of grid) {
    const chance = logistic(row.reduce((sum, value, i) => sum + value * weights[i]!, bias));
    for (let n = 0; n < 200; n++) {
      features.push(row);
      outcomes.push(n < Math.round(200 * chance) ? 1 : 0);
    }
  }
  return { features, outcomes };
}

const grid = [-2, -1, 0, 1, 2].flatMap((a) => [-2, -1, 0, 1, 2].map((b) => [a, b]));

t.test('the fit finds the weights the outcomes were drawn from', async (t) => {
  const { features, outcomes } = sample([0.7, 1.6], 2, grid);
  const { weights, bias } = fitLogistic(features, outcomes);
  t.ok(Math.abs(weights[0]! - 0.7) < 0.05, `${weights[0]}`);
  t.ok(Math.abs(weights[1]! - 1.6) < 0.05, `${weights[1]}`);
  t.ok(Math.abs(bias - 2) < 0.05, `${bias}`);
});

t.test(
  'with no weight below 0, a feature that would weigh below 0 weighs 0 and the others are fitted without it',
  async (t) => {
    const { features, outcomes } = sample([1.2, -0.8], 0.5, grid);
    const free = fitLogistic(features, outcomes, 0.01);
    t.ok(free.weights[1]! < 0, 'unconstrained, the second feature weighs below 0');
    const { weights, bias } = fitLogisticNonNegative(features, outcomes, 0.01);
    t.equal(weights[1], 0);
    const alone = fitLogistic(
      features.map(([first]) => [first!]),
      outcomes,
      0.01,
    );
    t.ok(
      Math.abs(weights[0]! - alone.weights[0]!) < 1e-6 && Math.abs(bias - alone.bias) < 1e-6,
      'as if fitted on the first feature alone',
    );
  },
);

t.test('with no weight below 0, weights fitted at 0 or more are the plain fit', async (t) => {
  const { features, outcomes } = sample([0.7, 1.6], 2, grid);
  t.same(fitLogisticNonNegative(features, outcomes, 0.01), fitLogistic(features, outcomes, 0.01));
});

t.test(
  'the last features named either-sign keep a weight below 0; the others are still held at 0 or more',
  async (t) => {
    // The third feature is a layout's indicator: readings in that layout are less often right.
    const withIndicator = grid.flatMap((row) => [
      [...row, 0],
      [...row, 1],
    ]);
    const drawn = sample([1.2, 0.6, -1.5], 0.5, withIndicator);
    const { weights } = fitLogisticNonNegative(drawn.features, drawn.outcomes, 0.01, 1);
    t.ok(Math.abs(weights[2]! + 1.5) < 0.05, `the indicator weighs ${weights[2]}`);
    t.equal(
      fitLogisticNonNegative(drawn.features, drawn.outcomes, 0.01, 0).weights[2],
      0,
      'not named either-sign: held at 0',
    );

    const secondBelowZero = sample([1.2, -0.8, -1.5], 0.5, withIndicator);
    const held = fitLogisticNonNegative(secondBelowZero.features, secondBelowZero.outcomes, 0.01, 1);
    t.equal(held.weights[1], 0);
    t.ok(held.weights[2]! < 0);
  },
);

t.test('out of fold, each row is judged by a fit on the other folds only', async (t) => {
  // A fit that knows nothing but its rows' share of exact readings.
  const shareExact = (_features: number[][], outcomes: number[]) => {
    const share = outcomes.reduce((sum, outcome) => sum + outcome, 0) / outcomes.length;
    return { weights: [0], bias: Math.log(share / (1 - share)) };
  };
  const features = Array.from({ length: 10 }, (_, row) => [row]);
  const outcomes = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0];
  const leftOneOut = outOfFoldProbabilities(features, outcomes, shareExact, 10, 1).map((p) => Number(p.toFixed(9)));
  t.same(
    leftOneOut,
    outcomes.map((outcome) => Number(((outcome ? 4 : 5) / 9).toFixed(9))),
    'in ten folds of ten rows, a row is judged by the nine others',
  );

  const seen: number[][] = [];
  const recordingFit = (rows: number[][]) => {
    seen.push(rows.map(([row]) => row!));
    return { weights: [0], bias: seen.length - 1 };
  };
  const judgedBy = outOfFoldProbabilities(features, outcomes, recordingFit, 2, 7).map((p) =>
    Math.round(Math.log(p / (1 - p))),
  );
  t.same(
    seen.map((rows) => rows.length),
    [5, 5],
    'two folds: each fit sees half the rows',
  );
  t.ok(
    judgedBy.every((fit, row) => !seen[fit]!.includes(row)),
    'and judges the other half',
  );
  t.same(
    outOfFoldProbabilities(features, outcomes, shareExact, 3, 7),
    outOfFoldProbabilities(features, outcomes, shareExact, 3, 7),
    'the same seed deals the same folds',
  );
  t.notSame(
    outOfFoldProbabilities(features, outcomes, shareExact, 3, 7),
    outOfFoldProbabilities(features, outcomes, shareExact, 3, 8),
    'another seed others',
  );
});
