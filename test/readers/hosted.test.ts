import t from 'tap';
import { METER_ANSWER_SCHEMA, parseAnswerText, readingFromAnswer, requestFailed } from '../../src/readers/hosted.ts';

const readerError = (kind: string) => ({ name: 'ReaderError', kind });

t.test('parseAnswerText', async (t) => {
  t.same(parseAnswerText('x', '{"reading":"012.5"}'), { reading: '012.5' });
  t.same(parseAnswerText('x', 'Here you go:\n```json\n{"reading": "012.5"}\n```'), { reading: '012.5' });
  for (const text of ['', 'no idea', '{"reading": "012.5"', '{reading: 012.5}']) {
    t.throws(() => parseAnswerText('x', text), readerError('unparseable'), JSON.stringify(text));
  }
});

t.test('readingFromAnswer', async (t) => {
  const answer = { reading: ' 00417.50 ', confidence: 87.6, unobstructed: true };
  t.same(readingFromAnswer('x', answer, 'm'), {
    reading: '00417.50',
    value: 417.5,
    confidence: 88,
    model: 'm',
    raw: answer,
  });

  t.equal(readingFromAnswer('x', { reading: '1', confidence: -3, unobstructed: true }, 'm').confidence, 0);
  t.equal(
    readingFromAnswer('x', { reading: '1', confidence: '90', unobstructed: true }, 'm').confidence,
    0,
    'a confidence that is not a number counts as none',
  );
  t.equal(readingFromAnswer('x', { reading: '1' }, 'm').confidence, 0);

  const unparseable = [
    null,
    'text',
    ['01'],
    {},
    { reading: 417, confidence: 90, unobstructed: true },
    { reading: '0,417', confidence: 90, unobstructed: true },
    { reading: '12.3.4', confidence: 90, unobstructed: true },
  ];
  for (const bad of unparseable) {
    t.throws(() => readingFromAnswer('x', bad, 'm'), readerError('unparseable'), JSON.stringify(bad));
  }

  t.throws(
    () => readingFromAnswer('x', { reading: '00417', confidence: 20, unobstructed: false }, 'm'),
    readerError('unreadable'),
  );
  t.throws(
    () => readingFromAnswer('x', { reading: ' ', confidence: 90, unobstructed: true }, 'm'),
    readerError('unreadable'),
  );
  t.throws(
    () => readingFromAnswer('x', { reading: null, confidence: 0, unobstructed: false }, 'm'),
    readerError('unreadable'),
    'no reading because the counter is hidden',
  );
});

t.test('requestFailed is unavailable and keeps the cause', async (t) => {
  const cause = Object.assign(new Error('boom'), { status: 503 });
  t.match(requestFailed('x', cause), { kind: 'unavailable', message: /HTTP 503/, cause });
});

t.test('the schema asks for exactly the answer fields', async (t) => {
  t.same(Object.keys(METER_ANSWER_SCHEMA.properties).sort(), ['confidence', 'reading', 'unobstructed']);
  t.same([...METER_ANSWER_SCHEMA.required].sort(), ['confidence', 'reading', 'unobstructed']);
});
