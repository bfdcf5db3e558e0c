import t from 'tap';
import { csvCell, csvLine } from '../../src/meters/billing-export.ts';

t.test('CSV cells: RFC 4180 quoting, and text a spreadsheet would run as a formula is defused', async (t) => {
  t.equal(csvCell('SN-7'), 'SN-7');
  t.equal(csvCell('a, b'), '"a, b"');
  t.equal(csvCell('say "hi"'), '"say ""hi"""');
  t.equal(csvCell('two\r\nlines'), '"two\r\nlines"');
  for (const formula of ['=1+1', '+1+1', '-1+1', '@SUM(A1)', '\t=1', '\r=1'])
    t.equal(csvCell(formula).replace(/^"/, '').charAt(0), "'", JSON.stringify(formula));
  t.equal(csvCell('=A1,B1'), `"'=A1,B1"`, 'defused and quoted');
  t.equal(csvCell(-5.5), '-5.5', 'a number stays a number');
  t.equal(csvCell(null), '');
  t.equal(csvCell(true), 'true');
  t.equal(csvCell(new Date(Date.UTC(2026, 0, 2, 3, 4, 5))), '2026-01-02T03:04:05.000Z', 'UTC RFC 3339');
  t.equal(csvLine(['a', null, 1]), 'a,,1\r\n');
});
