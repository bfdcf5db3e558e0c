/**
 * Logistic regression for the ml/ scripts that fit how sure the local reader is (fit_confidence.ts,
 * fit_calibration.ts).
 */

/**
 * Logistic regression by Newton's method (a few features, a few hundred photos: exact and fast). `l2Penalty` on the
 * weights (not the bias) keeps a handful of misreads from driving a weight to infinity.
 */
export function fitLogistic(
  features: number[][],
  outcomes: number[],
  l2Penalty = 0,
): { weights: number[]; bias: number } {
  const size = features[0]!.length + 1;
  const rows = features.map((row) => [...row, 1]);
  let coefficients = new Array<number>(size).fill(0);
  for (let iteration = 0; iteration < 50; iteration++) {
    const gradient = new Array<number>(size).fill(0);
    const hessian = Array.from({ length: size }, () => new Array<number>(size).fill(0));
    rows.forEach((row, r) => {
      const p = logistic(dot(coefficients, row));
      for (let i = 0; i < size; i++) {
        gradient[i]! += (p - outcomes[r]!) * row[i]!;
        for (let j = 0; j < size; j++) hessian[i]![j]! += p * (1 - p) * row[i]! * row[j]!;
      }
    });
    for (let i = 0; i < size - 1; i++) {
      gradient[i]! += l2Penalty * coefficients[i]!;
      hessian[i]![i]! += l2Penalty;
    }
    const step = solve(hessian, gradient);
    coefficients = coefficients.map((value, i) => value - step[i]!);
    if (Math.max(...step.map(Math.abs)) < 1e-9) break;
  }
  return { weights: coefficients.slice(0, -1), bias: coefficients.at(-1)! };
}

/**
 * fitLogistic with no weight below 0, for features each of which says the reading is surer the higher it is: a weight
 * fitted below 0 is zeroed in every row and the fit run again (with `l2Penalty` its weight then comes out 0). The last
 * `eitherSign` features (a layout's indicator, say) may weigh either way.
 */
export function fitLogisticNonNegative(
  features: number[][],
  outcomes: number[],
  l2Penalty: number,
  eitherSign = 0,
): { weights: number[]; bias: number } {
  const signed = (features[0]?.length ?? 0) - eitherSign;
  const zeroed = new Set<number>();
  for (;;) {
    const fit = fitLogistic(
      features.map((row) => row.map((feature, i) => (zeroed.has(i) ? 0 : feature))),
      outcomes,
      l2Penalty,
    );
    const negative = fit.weights.flatMap((weight, i) => (weight < 0 && i < signed ? [i] : []));
    if (negative.length === 0) return fit;
    for (const i of negative) zeroed.add(i);
  }
}

/** Solves `matrix · x = vector` by Gaussian elimination with partial pivoting. */
function solve(matrix: number[][], vector: number[]): number[] {
  const n = vector.length;
  const rows = matrix.map((row, i) => [...row, vector[i]!]);
  for (let column = 0; column < n; column++) {
    let pivot = column;
    for (let r = column + 1; r < n; r++) if (Math.abs(rows[r]![column]!) > Math.abs(rows[pivot]![column]!)) pivot = r;
    [rows[column], rows[pivot]] = [rows[pivot]!, rows[column]!];
    for (let r = 0; r < n; r++) {
      if (r === column) continue;
      const factor = rows[r]![column]! / rows[column]![column]!;
      for (let c = column; c <= n; c++) rows[r]![c]! -= factor * rows[column]![c]!;
    }
  }
  return rows.map((row, i) => row[n]! / row[i]!);
}

/** The probability a fit gives a row of features. */
export function predictLogistic({ weights, bias }: { weights: number[]; bias: number }, row: number[]): number {
  return logistic(dot(weights, row) + bias);
}

export function logistic(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

function dot(a: number[], b: number[]): number {
  return a.reduce((sum, value, i) => sum + value * b[i]!, 0);
}

/**
 * Each row's probability from a fit (`fit`) on the rows of the other folds, the rows dealt round `folds` folds in an
 * order shuffled by `seed` (the same seed, the same folds): every row judged by a fit that did not see it.
 */
export function outOfFoldProbabilities(
  features: number[][],
  outcomes: number[],
  fit: (features: number[][], outcomes: number[]) => { weights: number[]; bias: number },
  folds: number,
  seed: number,
): number[] {
  const foldOf = new Array<number>(features.length);
  shuffled(
    features.map((_, row) => row),
    seed,
  ).forEach((row, position) => {
    foldOf[row] = position % folds;
  });
  const probabilities = new Array<number>(features.length);
  for (let fold = 0; fold < folds; fold++) {
    const kept = features.flatMap((_, row) => (foldOf[row] === fold ? [] : [row]));
    const keptFit = fit(
      kept.map((row) => features[row]!),
      kept.map((row) => outcomes[row]!),
    );
    features.forEach((row, r) => {
      if (foldOf[r] === fold) probabilities[r] = predictLogistic(keptFit, row);
    });
  }
  return probabilities;
}

/** `values` in an order drawn from `seed` (Fisher–Yates with the mulberry32 generator). */
function shuffled<T>(values: T[], seed: number): T[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const result = [...values];
  for (let i = result.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [result[i], result[j]] = [result[j]!, result[i]!];
  }
  return result;
}
