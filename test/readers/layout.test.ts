import t from 'tap';
import { fitsLayout, layoutShownBy, outsideLayoutReason } from '../../src/readers/layout.ts';

t.test('a reading written with its leading zeros shows its layout; one without them shows none', async (t) => {
  t.same(layoutShownBy('00024.807'), { whole: 5, fraction: 3, shownBy: '00024.807' });
  t.same(layoutShownBy('01348'), { whole: 5, fraction: 0, shownBy: '01348' });
  t.same(layoutShownBy('000123.4567'), { whole: 6, fraction: 4, shownBy: '000123.4567' });
  for (const reading of ['24.807', '2390', '12345.678', '0', '0.5', '7'])
    t.equal(layoutShownBy(reading), undefined, reading);
});

t.test(
  'a reading fits a layout with all its fractional wheels, and its whole-unit wheels or fewer without zeros',
  async (t) => {
    const fiveAndThree = { whole: 5, fraction: 3 };
    for (const reading of ['00037.902', '37.902', '12345.678', '0.902'])
      t.ok(fitsLayout(reading, fiveAndThree), reading);
    for (const reading of ['00379', '00037.90', '00037.9021', '0037.902', '000037.902', '123456.789', '37'])
      t.notOk(fitsLayout(reading, fiveAndThree), reading);
    t.ok(fitsLayout('01348', { whole: 5, fraction: 0 }));
    t.notOk(fitsLayout('01348.0', { whole: 5, fraction: 0 }));
  },
);

t.test('the reason names both layouts and where the meter’s comes from', async (t) => {
  t.equal(outsideLayoutReason('00037.902', { whole: 5, fraction: 3 }), undefined);
  t.equal(
    outsideLayoutReason('00379', { whole: 5, fraction: 3, shownBy: '00024.807' }),
    '00379 has 5 whole and 0 fractional wheels; the meter has 5 and 3 (as 00024.807 shows)',
  );
  t.equal(
    outsideLayoutReason('0379.9', { whole: 5, fraction: 3 }),
    '0379.9 has 4 whole and 1 fractional wheels; the meter has 5 and 3 (as set for the meter)',
  );
});
