import sharp from 'sharp';
import t from 'tap';
import {
  evenlySpaced,
  isDiagonal,
  rectifyInto,
  scaleWindow,
  sliceWindow,
  spanOfWindow,
  turnWindow,
  windowAroundWheels,
  windowContains,
  windowCorners,
  windowsAroundWheels,
  windowTurnedBack,
  windowsFromMask,
  windowsInscribedIn,
  type RgbImage,
  type Window,
} from '../../src/readers/local/geometry.ts';

/** A width x height mask with probability 1 inside the rectangle (centre, angle, half sizes in cells). */
function rectangleMask(
  width: number,
  height: number,
  cx: number,
  cy: number,
  angle: number,
  hw: number,
  hh: number,
): Float32Array {
  const mask = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const dx = x + 0.5 - cx,
        dy = y + 0.5 - cy;
      const u = dx * Math.cos(angle) + dy * Math.sin(angle);
      const v = -dx * Math.sin(angle) + dy * Math.cos(angle);
      if (Math.abs(u) <= hw && Math.abs(v) <= hh) mask[y * width + x] = 1;
    }
  }
  return mask;
}

t.test('an axis-aligned window: centre, extent, reading direction to the right', async (t) => {
  const window = windowsFromMask(rectangleMask(64, 64, 32, 20, 0, 12, 3), 64, 64)[0]!;
  t.same(window.centre, [32, 20]);
  t.same(window.across, [1, 0]);
  t.same([window.halfWidth, window.halfHeight], [12, 3]);
  t.same(
    windowCorners(window),
    [
      [20, 17],
      [44, 17],
      [44, 23],
      [20, 23],
    ],
    'clockwise from top-left',
  );
});

t.test('a tilted window is fitted along its long axis', async (t) => {
  const angle = (20 * Math.PI) / 180;
  const window = windowsFromMask(rectangleMask(64, 64, 30, 34, angle, 16, 4), 64, 64)[0]!;
  t.ok(Math.abs(Math.atan2(window.across[1], window.across[0]) - angle) < 0.05);
  t.ok(Math.abs(window.centre[0] - 30) < 1 && Math.abs(window.centre[1] - 34) < 1);
  t.ok(Math.abs(window.halfWidth - 16) < 1.5 && Math.abs(window.halfHeight - 4) < 1.5);
});

t.test('a vertical window reads downwards until the reader says otherwise', async (t) => {
  const window = windowsFromMask(rectangleMask(64, 64, 20, 32, Math.PI / 2, 14, 3), 64, 64)[0]!;
  t.same(window.across.map(Math.round), [0, 1]);
  t.same(turnWindow(window).across.map(Math.round), [-0, -1]);
});

t.test(
  "rectangles inscribed in a bounding box: each one's bounding box is the box, and a tilted counter is among them",
  async (t) => {
    const box = { left: 100, top: 50, width: 300, height: 160 };
    const windows = [...windowsInscribedIn(box, 2.5, 3)];
    t.ok(windows.length > 0);
    for (const window of windows) {
      const corners = windowCorners(window);
      const [xs, ys] = [corners.map(([x]) => x), corners.map(([, y]) => y)];
      t.ok(Math.abs(Math.min(...xs) - 100) < 1e-6 && Math.abs(Math.max(...xs) - 400) < 1e-6, "spans the box's width");
      t.ok(Math.abs(Math.min(...ys) - 50) < 1e-6 && Math.abs(Math.max(...ys) - 210) < 1e-6, "spans the box's height");
      t.ok(window.halfWidth >= 2.5 * window.halfHeight, 'at least as elongated as asked');
    }
    // A 250 x 50 counter tilted by 24 degrees has a 248.7 x 147.4 bounding box.
    const angle = (24 * Math.PI) / 180;
    const tilted = {
      left: 0,
      top: 0,
      width: 250 * Math.cos(angle) + 50 * Math.sin(angle),
      height: 250 * Math.sin(angle) + 50 * Math.cos(angle),
    };
    const fit = [...windowsInscribedIn(tilted, 2.5, 3)].find(
      (window) => Math.abs(window.across[1] - Math.sin(angle)) < 1e-9,
    )!;
    t.ok(Math.abs(fit.halfWidth - 125) < 1e-6 && Math.abs(fit.halfHeight - 25) < 1e-6);
    t.same(
      [...windowsInscribedIn({ left: 0, top: 0, width: 100, height: 100 }, 2.5, 3)],
      [],
      'a square box holds no elongated rectangle',
    );
  },
);

t.test('the strongest region comes first and specks are dropped; an empty mask finds nothing', async (t) => {
  const mask = rectangleMask(32, 32, 16, 16, 0, 8, 2);
  mask[0] = 0.9;
  const windows = windowsFromMask(mask, 32, 32);
  t.equal(windows.length, 1);
  t.same(windows[0]!.centre, [16, 16]);
  t.same(windowsFromMask(new Float32Array(32 * 32).fill(0.2), 32, 32), []);
});

t.test('rival regions of comparable mass are candidates too, strongest first, at most three', async (t) => {
  const mask = new Float32Array(64 * 64);
  const rivals = [
    [32, 8, 12],
    [32, 24, 10],
    [32, 40, 8],
    [32, 56, 6],
  ] as const;
  for (const [cx, cy, hw] of rivals) {
    rectangleMask(64, 64, cx, cy, 0, hw, 2).forEach((p, cell) => {
      if (p) mask[cell] = p;
    });
  }
  t.same(
    windowsFromMask(mask, 64, 64).map((window) => window.centre),
    [
      [32, 8],
      [32, 24],
      [32, 40],
    ],
  );
});

t.test('scaling moves the window into another pixel frame', async (t) => {
  const window = scaleWindow({ centre: [10, 5], across: [1, 0], halfWidth: 4, halfHeight: 1 }, 2.5);
  t.same(window, { centre: [25, 12.5], across: [1, 0], halfWidth: 10, halfHeight: 2.5 });
});

t.test('rectifying samples the window into a planar strip, turned half a turn when asked', async (t) => {
  // 8 x 2 photo: red grows left to right, green is 255 on the top row; blue 0.
  const data = new Uint8Array(8 * 2 * 3);
  for (let y = 0; y < 2; y++) for (let x = 0; x < 8; x++) data.set([x * 30, y === 0 ? 255 : 0, 0], (y * 8 + x) * 3);
  const photo: RgbImage = { data, width: 8, height: 2 };
  const window = {
    centre: [4, 1] as [number, number],
    across: [1, 0] as [number, number],
    halfWidth: 4,
    halfHeight: 1,
  };
  const strip = new Float32Array(3 * 8 * 2);
  rectifyInto(photo, window, 0, 0, 8, 2, strip, 0);
  const red = (row: number, column: number) => Math.round((strip[row * 8 + column]! + 0.5) * 255);
  const green = (row: number, column: number) => Math.round((strip[16 + row * 8 + column]! + 0.5) * 255);
  t.same([red(0, 0), red(0, 7), green(0, 3), green(1, 3)], [0, 210, 255, 0]);
  rectifyInto(photo, turnWindow(window), 0, 0, 8, 2, strip, 0);
  t.same([red(0, 0), red(0, 7), green(0, 3), green(1, 3)], [210, 0, 0, 255]);
});

t.test('outside the photo reads as black', async (t) => {
  const photo: RgbImage = { data: new Uint8Array(4 * 4 * 3).fill(255), width: 4, height: 4 };
  const strip = new Float32Array(3 * 4 * 1);
  rectifyInto(photo, { centre: [2, 2], across: [1, 0], halfWidth: 2, halfHeight: 0.5 }, 1, 0, 4, 1, strip, 0);
  t.same(Array.from(strip.subarray(0, 4)), [-0.5, 0.5, 0.5, -0.5]);
});

t.test('a window cut into equal slices along the counter, left to right as it reads', async (t) => {
  const window = {
    centre: [50, 20] as [number, number],
    across: [0, 1] as [number, number],
    halfWidth: 40,
    halfHeight: 5,
  };
  const slices = [0, 1, 2, 3].map((index) => sliceWindow(window, index, 4));
  t.same(
    slices.map((slice) => slice.centre),
    [
      [50, -10],
      [50, 10],
      [50, 30],
      [50, 50],
    ],
  );
  t.ok(slices.every((slice) => slice.halfWidth === 10 && slice.halfHeight === 5 && slice.across === window.across));
  t.same(
    sliceWindow(turnWindow(window), 0, 4).centre,
    [50, 50],
    'the first slice of the turned window is the last of the window',
  );
  const centreAt = (index: number) => sliceWindow(window, index, 4).centre.map((v) => Number(v.toFixed(9)));
  t.same(centreAt(1.1), [50, 12], 'a fractional index moves the slice that share of a slice along the counter');
  t.same(centreAt(0.9), [50, 8]);
  t.equal(sliceWindow(window, 0.9, 4).halfWidth, 10, 'at its width');
});

t.test('a window cut to its wheels: half a wheel beyond the first and last wheel centres', async (t) => {
  const window = {
    centre: [100, 50] as [number, number],
    across: [1, 0] as [number, number],
    halfWidth: 100,
    halfHeight: 10,
  };
  const cut = windowAroundWheels(window, [-0.6, -0.3, 0, 0.3]);
  t.same(
    cut.centre.map((value) => Number(value.toFixed(6))),
    [85, 50],
    'from -0.75 to 0.45 of the half-width',
  );
  t.equal(Number(cut.halfWidth.toFixed(6)), 60);
  t.equal(cut.halfHeight, 10);
  const turned = windowAroundWheels(turnWindow(window), [-0.6, -0.3, 0, 0.3]);
  t.same(
    turned.centre.map((value) => Number(value.toFixed(6))),
    [115, 50],
    'measured along the way the counter reads',
  );
  t.same(windowAroundWheels(window, [0.2]), window, 'one wheel gives no spacing: the window stays');
  t.same(spanOfWindow(window, -1.2, 1.2).halfWidth, 120, 'a span may reach past the window');
});

t.test(
  'the wheels evenly spaced that best fit the centres the reader placed: one or two placed apart move no wheel',
  async (t) => {
    const round = ({ first, spacing }: { first: number; spacing: number }) => [
      Number(first.toFixed(6)),
      Number(spacing.toFixed(6)),
    ];
    t.same(round(evenlySpaced([-0.6, -0.3, 0, 0.3])), [-0.6, 0.3], 'evenly spaced centres are the line');
    t.same(
      round(evenlySpaced([-1.2, -1, -0.3, 0, 0.3, 0.6])),
      [-0.9, 0.3],
      'two leading centres placed early are passed over',
    );
    t.same(round(evenlySpaced([-0.9, -0.6, -0.3, 0, 0.35])), [-0.9, 0.3], 'one centre a little off is passed over');
  },
);

t.test(
  'a window cut to its wheels twice where the reader placed its first or last wheel apart from the rest',
  async (t) => {
    const window = {
      centre: [100, 50] as [number, number],
      across: [1, 0] as [number, number],
      halfWidth: 100,
      halfHeight: 10,
    };
    const spans = (centres: number[]) =>
      windowsAroundWheels(window, centres).map((cut) => [
        Number((cut.centre[0] - cut.halfWidth).toFixed(6)),
        Number((cut.centre[0] + cut.halfWidth).toFixed(6)),
      ]);
    t.same(spans([-0.6, -0.3, 0, 0.3]), [[25, 145]], 'evenly spaced: one cut');
    t.same(spans([-0.6, -0.3, 0, 0.33]), [[25, 145]], 'a last wheel a tenth of a wheel late: one cut');
    t.same(
      spans([-1.2, -0.6, -0.3, 0, 0.3]),
      [
        [-5, 145],
        [-38.75, 148.75],
      ],
      'a first wheel placed a wheel early: the cut that passes it over, then the cut from it to the last',
    );
    t.same(
      windowAroundWheels(window, [-1.2, -0.6, -0.3, 0, 0.3]),
      windowsAroundWheels(window, [-1.2, -0.6, -0.3, 0, 0.3])[0],
      'windowAroundWheels is the first',
    );
    t.same(windowsAroundWheels(window, [0.2]), [window], 'one wheel: the window');
  },
);

t.test('a window found in the photo turned by sharp is put back where it is in the photo', async (t) => {
  const photo = { width: 40, height: 20 };
  const data = new Uint8Array(photo.width * photo.height * 3);
  for (const [x, y] of [
    [30, 5],
    [31, 5],
    [30, 6],
    [31, 6],
  ] as const)
    data.fill(255, (y * photo.width + x) * 3, (y * photo.width + x + 1) * 3);
  for (const degrees of [45, -45]) {
    const { data: turnedData, info } = await sharp(data, { raw: { ...photo, channels: 3 } })
      .rotate(degrees, { background: { r: 0, g: 0, b: 0 } })
      .raw()
      .toBuffer({ resolveWithObject: true });
    let [sum, sumX, sumY] = [0, 0, 0];
    for (let y = 0; y < info.height; y++) {
      for (let x = 0; x < info.width; x++) {
        const value = turnedData[(y * info.width + x) * info.channels]!;
        [sum, sumX, sumY] = [sum + value, sumX + value * (x + 0.5), sumY + value * (y + 0.5)];
      }
    }
    const found = {
      centre: [sumX / sum, sumY / sum] as [number, number],
      across: [1, 0] as [number, number],
      halfWidth: 3,
      halfHeight: 1,
    };
    const back = windowTurnedBack(found, degrees, photo, info);
    t.ok(
      Math.hypot(back.centre[0] - 31, back.centre[1] - 6) < 1,
      `turned ${degrees}: the dot at ${back.centre}, drawn at 31,6`,
    );
    const angle = (-degrees * Math.PI) / 180;
    t.same(
      back.across.map((v) => v.toFixed(6)),
      [Math.cos(angle), Math.sin(angle)].map((v) => v.toFixed(6)),
      'level there is turned back',
    );
    t.match(back, { halfWidth: 3, halfHeight: 1 });
  }
});

t.test('a window lies diagonally when it is tilted 22.5 to 67.5 degrees from level or from upright', async (t) => {
  const tilted = (degrees: number) => ({
    centre: [0, 0] as [number, number],
    across: [Math.cos((degrees * Math.PI) / 180), Math.sin((degrees * Math.PI) / 180)] as [number, number],
    halfWidth: 2,
    halfHeight: 1,
  });
  for (const degrees of [30, 45, 60, -45, 135, -120]) t.ok(isDiagonal(tilted(degrees)), `${degrees} degrees`);
  for (const degrees of [0, 10, -20, 80, 90, 180, -95]) t.notOk(isDiagonal(tilted(degrees)), `${degrees} degrees`);
});

t.test('a point lies in a window within its half width along it and its half height across it', async (t) => {
  const window: Window = { centre: [100, 50], across: [0.6, 0.8], halfWidth: 50, halfHeight: 10 };
  t.ok(windowContains(window, [100, 50]), 'its centre');
  t.ok(windowContains(window, [100 + 0.6 * 49, 50 + 0.8 * 49]), 'near its end, along the tilt');
  t.notOk(windowContains(window, [100 + 0.6 * 51, 50 + 0.8 * 51]), 'past its end');
  t.ok(windowContains(window, [100 - 0.8 * 9, 50 + 0.6 * 9]), 'near its edge, across the tilt');
  t.notOk(windowContains(window, [100 - 0.8 * 11, 50 + 0.6 * 11]), 'past its edge');
  t.notOk(windowContains(window, [100 + 40, 50]), 'level with its centre but outside the tilted window');
});
