import { billableReading, type SubmissionRecord } from '../meters/records.ts';
import { FLAGGED } from '../meters/review.ts';

const WIDTH = 640;
const HEIGHT = 240;
const MARGIN = { top: 16, right: 16, bottom: 28 };
/**
 * An upper bound of a tick label's character width at the stylesheet's 12px, for the left margin the value labels need.
 */
const TICK_CHAR_WIDTH = 7.5;
const TICK_GAP = 6;

export interface ChartPoint {
  x: number;
  y: number;
  label: string;
}

/** What the meter page draws as inline SVG (no script, no CDN: the strict CSP allows it). */
export interface ConsumptionChart {
  width: number;
  height: number;
  margin: typeof MARGIN & { left: number };
  /** Where the value labels end, left of the axis. */
  tickGap: number;
  points: ChartPoint[];
  path: string;
  yLabels: Array<{ y: number; text: string }>;
  xLabels: Array<{ x: number; text: string; anchor: 'start' | 'end' }>;
  /** Consumption from the first to the last point, and per day. */
  consumption: { total: number; perDay: number | null };
}

/**
 * The meter's index over time from its billable readings (a correction, else a reading that was not
 * flagged: manual readings too): the slope is the consumption. Undefined with fewer than two points.
 */
export function consumptionChart(records: SubmissionRecord[]): ConsumptionChart | undefined {
  const readings = records
    .filter((record) => record.correctedReading || (record.reading && !FLAGGED.includes(record.plausibility!)))
    .map((record) => ({ at: record.createdAt.getTime(), ...billableReading(record)! }))
    .sort((a, b) => a.at - b.at);
  if (readings.length < 2) return undefined;
  const first = readings[0]!;
  const last = readings.at(-1)!;
  const minValue = Math.min(...readings.map((reading) => reading.value));
  const maxValue = Math.max(...readings.map((reading) => reading.value));
  const valueSpan = maxValue - minValue || 1;
  const timeSpan = last.at - first.at || 1;
  const valueLabels = [minValue, maxValue].map((value) => `${round(value)} m³`);
  // Wide enough for the longest value label, which would otherwise be clipped at the SVG's left edge.
  const margin = {
    ...MARGIN,
    left: Math.ceil(TICK_GAP * 2 + TICK_CHAR_WIDTH * Math.max(...valueLabels.map((label) => label.length))),
  };
  const plotWidth = WIDTH - margin.left - margin.right;
  const plotHeight = HEIGHT - margin.top - margin.bottom;
  const xOf = (at: number) => round(margin.left + ((at - first.at) / timeSpan) * plotWidth);
  const yOf = (value: number) => round(margin.top + (1 - (value - minValue) / valueSpan) * plotHeight);
  const points = readings.map((reading) => ({
    x: xOf(reading.at),
    y: yOf(reading.value),
    label: `${reading.reading} m³ on ${new Date(reading.at).toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  }));
  const days = (last.at - first.at) / 86_400_000;
  const total = round(last.value - first.value);
  return {
    width: WIDTH,
    height: HEIGHT,
    margin,
    tickGap: TICK_GAP,
    points,
    path: points.map((point, index) => `${index ? 'L' : 'M'}${point.x},${point.y}`).join(' '),
    yLabels: [minValue, maxValue].map((value, index) => ({ y: yOf(value), text: valueLabels[index]! })),
    xLabels: [
      { x: xOf(first.at), text: new Date(first.at).toISOString().slice(0, 10), anchor: 'start' },
      { x: xOf(last.at), text: new Date(last.at).toISOString().slice(0, 10), anchor: 'end' },
    ],
    consumption: { total, perDay: days >= 1 ? round(total / days) : null },
  };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
