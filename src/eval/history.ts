/**
 * Simulated meter histories for `meterlens eval --previous`: each labelled photo gets a previous reading some
 * consumption below its label, and the plausibility window the service would compute from it.
 */
import { createHash } from 'node:crypto';
import type { PlausibilityWindow } from '../readers/reader.ts';
import type { LabelledPhoto } from './dataset.ts';

/** Consumption since the previous reading, in m³, drawn uniformly between these. */
export interface ConsumptionRange {
  min: number;
  max: number;
}

/** The window reaches this far above the previous reading: a month at 2 m³ a day, generous for a household. */
export const SIMULATED_MAX_CONSUMPTION_M3 = 60;
/** The window reaches this far below the previous reading: ten turns of the fastest red wheel (litres). */
export const SIMULATED_TOLERANCE_M3 = 0.01;

const DRAW_SEED = 'meterlens-eval-previous-1';

/** `A-B` (m³, 0 ≤ A ≤ B), e.g. `0-30`; undefined when it is not that. */
export function parseConsumptionRange(spec: string): ConsumptionRange | undefined {
  const match = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(spec.trim());
  if (!match) return undefined;
  const [min, max] = [Number(match[1]), Number(match[2])];
  return min <= max ? { min, max } : undefined;
}

/**
 * The window for a photo whose previous reading was its label minus a consumption drawn from `consumption` (to the
 * litre, never below zero). The draw depends only on the file name and a fixed seed: every run, and any subset of
 * the photos, sees the same histories.
 */
export function simulatedWindow(photo: LabelledPhoto, consumption: ConsumptionRange): PlausibilityWindow {
  const draw = createHash('sha1').update(`${DRAW_SEED}:${photo.file}`).digest().readUInt32BE(0) / 2 ** 32;
  const used = consumption.min + draw * (consumption.max - consumption.min);
  const previous = Math.max(0, Math.floor((Number(photo.accepted[0]) - used) * 1000) / 1000);
  return {
    reference: previous.toFixed(3),
    min: previous - SIMULATED_TOLERANCE_M3,
    max: previous + SIMULATED_MAX_CONSUMPTION_M3,
  };
}
