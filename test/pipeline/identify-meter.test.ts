import t from 'tap';
import { readingField } from '../../src/pipeline/identify-meter.ts';

t.test('a reading has at most the wheels a layout may have', async (t) => {
  t.equal(readingField('0000000001.123456', 'reading'), '0000000001.123456', '10 whole and 6 fractional wheels');
  t.equal(readingField(' 00606.494 ', 'reading'), '00606.494');
  t.equal(readingField(606.494, 'reading'), '606.494', 'a JSON number, without its leading zeros');
  for (const value of ['99999999999', '1.1234567', '99999999999999999999', '1e3', '-1', '', 12e20]) {
    t.throws(
      () => readingField(value, 'reading'),
      { kind: 'invalid', field: 'reading', message: /at most 10 before it and 6 after/ },
      String(value),
    );
  }
});
