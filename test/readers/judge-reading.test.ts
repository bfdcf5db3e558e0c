import t from 'tap';
import { usualAllowance, usualConsumption } from '../../src/meters/usual-consumption.ts';
import { plausibilityWindow } from '../../src/pipeline/expect-reading.ts';
import { UNDATED_ELAPSED_HOURS } from '../../src/plausibility-policy.ts';
import { judgeReading, judgeUsual } from '../../src/readers/judge-reading.ts';

const readAt = new Date('2026-11-01T00:00:00Z');

t.test(
  "the issue's misread: inside the physical window of an undated reference, but far above the meter's usual: suspicious",
  async (t) => {
    const reference = { reading: '00024.807', source: 'previous_reading' as const, readAt: null };
    const window = plausibilityWindow(reference, readAt, 2.5);
    t.ok(window.max < 24.807 + 2000, `an undated reference is a month of room, not a year (max ${window.max})`);
    const misread = { reading: '00379', value: 379, confidence: 100, model: 'm', raw: null };
    const judged = judgeReading(misread, window);
    t.equal(judged.plausibility, 'ok', 'the physical limit alone lets it through');
    const usual = usualConsumption([], 1.5);
    const usualMax = 24.807 + usualAllowance(usual, UNDATED_ELAPSED_HOURS / 24);
    const suspicious = judgeUsual(judged, { ...usual, max: usualMax });
    t.match(suspicious, {
      plausibility: 'suspicious',
      confidence: 100,
      plausibilityReason: /00379 is far more than usual.*1\.5 m³ a day/,
    });
    t.equal(
      judgeUsual(
        { ...misread, reading: '00037.902', value: 37.902, plausibility: 'ok' as const },
        { ...usual, max: usualMax },
      ).plausibility,
      'ok',
      'the right reading is usual',
    );
    t.equal(
      judgeUsual({ ...misread, plausibility: 'implausible' as const }, { ...usual, max: usualMax }).plausibility,
      'implausible',
      'the physical limit stays the hard one',
    );
    t.equal(judgeUsual(judged, undefined).plausibility, 'ok', 'no reference: nothing to judge by');
  },
);
