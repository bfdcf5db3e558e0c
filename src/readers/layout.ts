/**
 * A meter's counter layout: how many whole-unit (black) and fractional (red) wheels it has. Known from
 * a setting, or from a trusted reading written as the dial shows it; a reading in another layout is
 * not the meter's (docs/readings.md, "Plausibility").
 */

export interface MeterLayout {
  whole: number;
  fraction: number;
  /** The reading that shows the layout (a reference or trusted value); absent: set for the meter. */
  shownBy?: string;
}

/**
 * The layout a reading shows when it is written as the dial shows it: with its leading zeros
 * (`00024.807` → 5 + 3, `01348` → 5 + 0). One without them (`606.494`, `2390`) shows none: a client
 * or billing system that drops the zeros may drop or round the fractional wheels too.
 */
export function layoutShownBy(reading: string): MeterLayout | undefined {
  const [whole = '', fraction = ''] = reading.split('.');
  if (!padded(whole)) return undefined;
  return { whole: whole.length, fraction: fraction.length, shownBy: reading };
}

/**
 * Whether `reading` has the layout's wheels: its fractional wheels all, and its whole-unit wheels
 * all, or fewer without leading zeros (`37.902` is `00037.902` with its zeros dropped).
 */
export function fitsLayout(reading: string, layout: Pick<MeterLayout, 'whole' | 'fraction'>): boolean {
  const [whole = '', fraction = ''] = reading.split('.');
  if (fraction.length !== layout.fraction) return false;
  return whole.length === layout.whole || (whole.length < layout.whole && !padded(whole));
}

/** Whole-unit digits written with leading zeros (`00024`; a lone `0` is just zero). */
function padded(whole: string): boolean {
  return whole.length > 1 && whole.startsWith('0');
}

/** Why `reading` is not in the meter's layout; undefined when it is. */
export function outsideLayoutReason(reading: string, layout: MeterLayout): string | undefined {
  if (fitsLayout(reading, layout)) return undefined;
  const [whole = '', fraction = ''] = reading.split('.');
  const known = layout.shownBy ? `as ${layout.shownBy} shows` : 'as set for the meter';
  return `${reading} has ${whole.length} whole and ${fraction.length} fractional wheels; the meter has ${layout.whole} and ${layout.fraction} (${known})`;
}

/**
 * One step of a reading's fastest (rightmost) wheel, m³: `00606.494` → 0.001, `00606` → 1. A wheel half-way may be read
 * either way.
 */
export function fastestWheelStep(reading: string): number {
  return 10 ** -(reading.split('.')[1]?.length ?? 0);
}

/**
 * The lowest value the meter may show after `reading`: one step of its fastest wheel below it, since a wheel half-way
 * may be read either way. Lower is a meter that ran backwards, or another meter.
 */
export function lowestNextValue(reading: string): number {
  return Math.round((Number(reading) - fastestWheelStep(reading)) * 1e6) / 1e6;
}
