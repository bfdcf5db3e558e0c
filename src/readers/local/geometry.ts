export type Point = [number, number];

/** A rotated rectangle: centre, unit vector along the counter (left to right), half extents. */
export interface Window {
  centre: Point;
  across: Point;
  halfWidth: number;
  halfHeight: number;
}

const MASK_THRESHOLD = 0.5;
/** A region of the mask is a candidate window when it holds at least this share of the strongest region's mass. */
const CANDIDATE_MASS_SHARE = 0.25;
const MAX_CANDIDATES = 3;

/**
 * Candidate counter windows in mask cells, strongest first: the connected regions (4-neighbour) of cells above
 * the threshold that carry the most probability mass, each fitted with a rectangle along its principal axis.
 * Rival regions (a pipe, a dial, a second meter) are kept so the reader can say which one holds a reading.
 * The direction along the counter is only known up to 180°; `across` points rightwards (or down when vertical).
 */
export function windowsFromMask(probabilities: Float32Array, width: number, height: number): Window[] {
  const regions = regionsAboveThreshold(probabilities, width, height);
  const strongest = regions[0]?.mass ?? 0;
  return regions
    .filter((region) => region.mass >= CANDIDATE_MASS_SHARE * strongest)
    .slice(0, MAX_CANDIDATES)
    .map((region) => fitWindow(region.cells, probabilities, width));
}

function fitWindow(region: number[], probabilities: Float32Array, width: number): Window {
  let mass = 0,
    meanX = 0,
    meanY = 0;
  for (const cell of region) {
    const p = probabilities[cell]!;
    mass += p;
    meanX += p * ((cell % width) + 0.5);
    meanY += p * (Math.floor(cell / width) + 0.5);
  }
  meanX /= mass;
  meanY /= mass;
  let xx = 0,
    xy = 0,
    yy = 0;
  for (const cell of region) {
    const p = probabilities[cell]!;
    const dx = (cell % width) + 0.5 - meanX;
    const dy = Math.floor(cell / width) + 0.5 - meanY;
    xx += p * dx * dx;
    xy += p * dx * dy;
    yy += p * dy * dy;
  }
  const angle = 0.5 * Math.atan2(2 * xy, xx - yy);
  let across: Point = [Math.cos(angle), Math.sin(angle)];
  if (across[0] < -1e-9 || (Math.abs(across[0]) <= 1e-9 && across[1] < 0)) across = [-across[0], -across[1]];
  const down: Point = [-across[1], across[0]];
  let minU = Infinity,
    maxU = -Infinity,
    minV = Infinity,
    maxV = -Infinity;
  for (const cell of region) {
    const dx = (cell % width) + 0.5 - meanX;
    const dy = Math.floor(cell / width) + 0.5 - meanY;
    const u = dx * across[0] + dy * across[1];
    const v = dx * down[0] + dy * down[1];
    minU = Math.min(minU, u);
    maxU = Math.max(maxU, u);
    minV = Math.min(minV, v);
    maxV = Math.max(maxV, v);
  }
  // Cell centres span one cell less than the cells themselves.
  const centreU = (minU + maxU) / 2,
    centreV = (minV + maxV) / 2;
  return {
    centre: [meanX + centreU * across[0] + centreV * down[0], meanY + centreU * across[1] + centreV * down[1]],
    across,
    halfWidth: (maxU - minU + 1) / 2,
    halfHeight: (maxV - minV + 1) / 2,
  };
}

/** Connected regions of cells above the threshold with their probability mass, heaviest first. */
function regionsAboveThreshold(
  probabilities: Float32Array,
  width: number,
  height: number,
): Array<{ cells: number[]; mass: number }> {
  const seen = new Uint8Array(width * height);
  const regions: Array<{ cells: number[]; mass: number }> = [];
  for (let start = 0; start < width * height; start++) {
    if (seen[start] || probabilities[start]! < MASK_THRESHOLD) continue;
    const cells = [start];
    seen[start] = 1;
    let mass = 0;
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i]!;
      mass += probabilities[cell]!;
      const x = cell % width,
        y = Math.floor(cell / width);
      for (const [nx, ny] of [
        [x - 1, y],
        [x + 1, y],
        [x, y - 1],
        [x, y + 1],
      ] as const) {
        if (nx < 0 || ny < 0 || nx >= width || ny >= height) continue;
        const next = ny * width + nx;
        if (seen[next] || probabilities[next]! < MASK_THRESHOLD) continue;
        seen[next] = 1;
        cells.push(next);
      }
    }
    regions.push({ cells, mass });
  }
  return regions.sort((a, b) => b.mass - a.mass);
}

export function scaleWindow(window: Window, factor: number): Window {
  return {
    centre: [window.centre[0] * factor, window.centre[1] * factor],
    across: window.across,
    halfWidth: window.halfWidth * factor,
    halfHeight: window.halfHeight * factor,
  };
}

/** Turns the window half a turn: same rectangle, reading direction reversed. */
export function turnWindow(window: Window): Window {
  return { ...window, across: [-window.across[0], -window.across[1]] };
}

/**
 * The `index`-th (from the left as the counter reads) of `count` equal slices of the window along the counter; a
 * fractional index moves the slice by that share of a slice (1.5: halfway between the second and the third).
 */
export function sliceWindow(window: Window, index: number, count: number): Window {
  return spanOfWindow(window, (2 * index) / count - 1, (2 * (index + 1)) / count - 1);
}

/**
 * The part of the window along the counter from `start` to `end`, in half-widths from its centre (-1 its left end
 * as the counter reads, 1 its right end; beyond them it reaches past the window).
 */
export function spanOfWindow(window: Window, start: number, end: number): Window {
  const offset = ((start + end) / 2) * window.halfWidth;
  return {
    centre: [window.centre[0] + offset * window.across[0], window.centre[1] + offset * window.across[1]],
    across: window.across,
    halfWidth: ((end - start) / 2) * window.halfWidth,
    halfHeight: window.halfHeight,
  };
}

/**
 * The window cut to its wheels, from half a wheel before the first wheel's centre to half a wheel after the last
 * (`wheelCentres` in half-widths from its centre, as spanOfWindow): the centres as the evenly spaced line through
 * them (`evenlySpaced`) place them. The window itself with fewer than two wheels.
 */
export function windowAroundWheels(window: Window, wheelCentres: number[]): Window {
  return windowsAroundWheels(window, wheelCentres)[0]!;
}

/**
 * The window cut to its wheels as windowAroundWheels cuts it and, where either end lies more than a quarter wheel
 * from it, cut at the first and last centres as the reader placed them. Neither cut is right for every reader: one
 * that puts a leading 0 or two at the strip's first steps stretches the second; one that puts every leading 0 a
 * wheel early shifts the first (ml/EXPERIMENTS.md, "Wheels placed apart (v18)").
 */
export function windowsAroundWheels(window: Window, wheelCentres: number[]): Window[] {
  if (wheelCentres.length < 2) return [window];
  const { first, spacing } = evenlySpaced(wheelCentres);
  const fitted = spanAround(first, first + spacing * (wheelCentres.length - 1), wheelCentres.length);
  const placed = spanAround(wheelCentres[0]!, wheelCentres.at(-1)!, wheelCentres.length);
  const endsApart = Math.max(Math.abs(placed[0] - fitted[0]), Math.abs(placed[1] - fitted[1]));
  const cut = ([start, end]: [number, number]) => spanOfWindow(window, start, end);
  return endsApart <= spacing / 4 ? [cut(fitted)] : [cut(fitted), cut(placed)];
}

/** From half a wheel before the first of `count` evenly spaced wheel centres to half a wheel after the last. */
function spanAround(first: number, last: number, count: number): [start: number, end: number] {
  const halfWheel = (last - first) / (count - 1) / 2;
  return [first - halfWheel, last + halfWheel];
}

/**
 * The evenly spaced wheels that best fit `centres`: the repeated median (for each wheel the median of its spacings to
 * every other, and the median of those), then the median first centre it gives. Up to half the wheels placed apart
 * from the rest move no wheel.
 */
export function evenlySpaced(centres: number[]): { first: number; spacing: number } {
  const spacing = median(
    centres.map((centre, i) => median(centres.flatMap((other, j) => (j === i ? [] : [(other - centre) / (j - i)])))),
  );
  return { first: median(centres.map((centre, i) => centre - spacing * i)), spacing };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[Math.floor(middle)]!;
}

/**
 * Rectangles at least `minAspect` times as long as high whose axis-aligned bounding box is the given box, one for
 * each angle of the long side (every `angleStep` degrees): w cos a + h sin a = box width, w sin a + h cos a = box
 * height. A tilted counter labelled only with its bounding box lies along one of them.
 */
export function* windowsInscribedIn(
  box: { left: number; top: number; width: number; height: number },
  minAspect: number,
  angleStep: number,
): Generator<Window> {
  for (let degrees = -90 + angleStep; degrees < 90; degrees += angleStep) {
    const angle = (degrees * Math.PI) / 180;
    const [cos, sin] = [Math.cos(Math.abs(angle)), Math.sin(Math.abs(angle))];
    const determinant = cos * cos - sin * sin;
    const long = (box.width * cos - box.height * sin) / determinant;
    const short = (box.height * cos - box.width * sin) / determinant;
    if (!(short > 0 && long >= minAspect * short)) continue;
    yield {
      centre: [box.left + box.width / 2, box.top + box.height / 2],
      across: [Math.cos(angle), Math.sin(angle)],
      halfWidth: long / 2,
      halfHeight: short / 2,
    };
  }
}

/**
 * A window found in a photo turned `degrees` clockwise about its centre (on a canvas of `turned`'s size that holds
 * all of it), in the pixels of the photo itself (of `photo`'s size).
 */
export function windowTurnedBack(window: Window, degrees: number, photo: Size, turned: Size): Window {
  const angle = (-degrees * Math.PI) / 180;
  const [cos, sin] = [Math.cos(angle), Math.sin(angle)];
  const turnBack = ([x, y]: Point): Point => [x * cos - y * sin, x * sin + y * cos];
  const [x, y] = turnBack([window.centre[0] - turned.width / 2, window.centre[1] - turned.height / 2]);
  return { ...window, centre: [x + photo.width / 2, y + photo.height / 2], across: turnBack(window.across) };
}

/**
 * Whether the window lies nearer the diagonals of the photo than its sides: tilted 22.5° to 67.5° from level, or so
 * from upright.
 */
export function isDiagonal(window: Window): boolean {
  const tilt = ((((Math.atan2(window.across[1], window.across[0]) * 180) / Math.PI) % 90) + 90) % 90;
  return tilt > 22.5 && tilt < 67.5;
}

/** Whether the point lies inside the window. */
export function windowContains(window: Window, [x, y]: Point): boolean {
  const [dx, dy] = [x - window.centre[0], y - window.centre[1]];
  const [ax, ay] = window.across;
  return Math.abs(dx * ax + dy * ay) <= window.halfWidth && Math.abs(dy * ax - dx * ay) <= window.halfHeight;
}

/** Corners clockwise from the top-left as the counter reads (top-left, top-right, bottom-right, bottom-left). */
export function windowCorners(window: Window): Point[] {
  const [cx, cy] = window.centre;
  const [ax, ay] = window.across;
  const [dx, dy] = [-ay, ax];
  const corner = (su: number, sv: number): Point => [
    cx + su * window.halfWidth * ax + sv * window.halfHeight * dx,
    cy + su * window.halfWidth * ay + sv * window.halfHeight * dy,
  ];
  return [corner(-1, -1), corner(1, -1), corner(1, 1), corner(-1, 1)];
}

export interface Size {
  width: number;
  height: number;
}

export interface RgbImage extends Size {
  data: Uint8Array;
}

/**
 * Samples the window grown by the margins into a `width` x `height` strip, bilinearly, as planar RGB floats in
 * [-0.5, 0.5] (the reader's input layout), written into `out` at `offset`. Outside the photo reads as black.
 */
export function rectifyInto(
  image: RgbImage,
  window: Window,
  marginX: number,
  marginY: number,
  width: number,
  height: number,
  out: Float32Array,
  offset: number,
): void {
  const halfWidth = window.halfWidth * (1 + 2 * marginX);
  const halfHeight = window.halfHeight * (1 + 2 * marginY);
  const [ax, ay] = window.across;
  const [dx, dy] = [-ay, ax];
  const plane = width * height;
  for (let row = 0; row < height; row++) {
    const v = (((row + 0.5) / height) * 2 - 1) * halfHeight;
    for (let column = 0; column < width; column++) {
      const u = (((column + 0.5) / width) * 2 - 1) * halfWidth;
      const x = window.centre[0] + u * ax + v * dx - 0.5;
      const y = window.centre[1] + u * ay + v * dy - 0.5;
      const x0 = Math.floor(x),
        y0 = Math.floor(y);
      const fx = x - x0,
        fy = y - y0;
      const target = offset + row * width + column;
      for (let channel = 0; channel < 3; channel++) {
        const value =
          pixel(image, x0, y0, channel) * (1 - fx) * (1 - fy) +
          pixel(image, x0 + 1, y0, channel) * fx * (1 - fy) +
          pixel(image, x0, y0 + 1, channel) * (1 - fx) * fy +
          pixel(image, x0 + 1, y0 + 1, channel) * fx * fy;
        out[target + channel * plane] = value / 255 - 0.5;
      }
    }
  }
}

function pixel(image: RgbImage, x: number, y: number, channel: number): number {
  if (x < 0 || y < 0 || x >= image.width || y >= image.height) return 0;
  return image.data[(y * image.width + x) * 3 + channel]!;
}
