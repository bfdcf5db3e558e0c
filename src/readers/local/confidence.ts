/**
 * What the local reader knows of how sure a reading is beside its confidence, reported in `raw.evidence`: how far
 * the photo's other readings agree with it. `ml/fit_confidence.ts` measures what a confidence lowered by these
 * disagreements would do (MODEL_CARD.md: on the validation split it kept fewer right readings local and no fewer
 * wrong ones, so the confidence stays the product).
 */

/** Every share is 0–1. */
export interface ConfidenceEvidence {
  /** The confidence: the product of the digits' (and the point's) probabilities × orientation belief × layout fit, 0–100. */
  product: number;
  /** Share of the strip readers whose own reading of the chosen window is the reading. */
  readersAgreeing: number;
  /** Share of the candidate windows (both localisers') read as the reading. */
  candidatesAgreeing: number;
  /** Share of the candidate windows, and of the strip readers on the chosen one, read in the reading's layout. */
  layoutsAgreeing: number;
}

/** The wheel layout of a reading, as in spec.ts's LAYOUTS (`ddddd.ddd`). */
export function layoutOf(text: string): string {
  return text.replace(/\d/g, 'd');
}

/** Share of `values` that pass `test`; 0 for none. */
export function shareOf<T>(values: T[], test: (value: T) => boolean): number {
  return values.length === 0 ? 0 : values.filter(test).length / values.length;
}
