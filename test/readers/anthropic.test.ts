import t from 'tap';
import { createAnthropicReader } from '../../src/readers/anthropic.ts';
import { METER_ANSWER_SCHEMA, METER_PROMPT } from '../../src/readers/hosted.ts';
import { startFakeAnthropic } from '../fakes/anthropic-server.ts';
import type { RecordedRequest } from '../fakes/http-fake.ts';
import { harness, testHostedReader, type HostedReaderUnderTest } from '../fakes/hosted-reader-suite.ts';

const anthropic: HostedReaderUnderTest = {
  name: 'anthropic',
  startFake: startFakeAnthropic,
  createReader: createAnthropicReader,
  env: (fakeUrl, model) => ({ ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: fakeUrl, ANTHROPIC_MODEL: model }),
  keyVariable: 'ANTHROPIC_API_KEY',
  imageSent(request: RecordedRequest) {
    const source = userContent(request).find((block) => block.type === 'image')?.source;
    return source?.type === 'base64' && source.media_type === 'image/jpeg' ? source.data : undefined;
  },
  promptSent(request: RecordedRequest) {
    return userContent(request).find((block) => block.type === 'text')?.text;
  },
};

function userContent(request: RecordedRequest): any[] {
  return request.body.messages.find((message: any) => message.role === 'user').content;
}

testHostedReader(t, anthropic);

t.test('forces a tool whose input schema is the shared schema', async (t) => {
  const { fake, image, reader } = await harness(t, anthropic);
  await reader().read(image, new AbortController().signal);

  const [request] = fake.requests;
  t.equal(request.path, '/v1/messages');
  // SDK 1.x sends the key as a bearer token; older ones used x-api-key.
  t.ok(request.headers['x-api-key'] === 'sk-ant-test' || request.headers.authorization === 'Bearer sk-ant-test');
  t.ok(request.headers['anthropic-version']);
  t.equal(request.body.tools.length, 1);
  t.same(request.body.tools[0].input_schema, METER_ANSWER_SCHEMA);
  t.same(request.body.tool_choice, { type: 'tool', name: request.body.tools[0].name });
  t.ok(userContent(request).some((block) => block.type === 'text' && block.text === METER_PROMPT));
});

t.test('reads a JSON answer written as text instead of a tool call', async (t) => {
  const answer = '```json\n{"reading": "00417.5", "confidence": 81, "unobstructed": true}\n```';
  const { image, reader } = await harness(t, anthropic, { answer });
  const reading = await reader().read(image, new AbortController().signal);
  t.match(reading, { reading: '00417.5', value: 417.5, confidence: 81, raw: { reading: '00417.5' } });
});
