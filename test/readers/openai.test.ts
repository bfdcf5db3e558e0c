import t from 'tap';
import { createOpenAIReader } from '../../src/readers/openai.ts';
import { METER_ANSWER_SCHEMA, METER_PROMPT } from '../../src/readers/hosted.ts';
import type { RecordedRequest } from '../fakes/http-fake.ts';
import { harness, testHostedReader, type HostedReaderUnderTest } from '../fakes/hosted-reader-suite.ts';
import { startFakeOpenAI } from '../fakes/openai-server.ts';

const DATA_URL_PREFIX = 'data:image/jpeg;base64,';

const openai: HostedReaderUnderTest = {
  name: 'openai',
  startFake: startFakeOpenAI,
  createReader: createOpenAIReader,
  env: (fakeUrl, model) => ({ OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fakeUrl, OPENAI_MODEL: model }),
  keyVariable: 'OPENAI_API_KEY',
  imageSent(request: RecordedRequest) {
    const url: unknown = userContent(request).find((part: any) => part.type === 'image_url')?.image_url?.url;
    return typeof url === 'string' && url.startsWith(DATA_URL_PREFIX) ? url.slice(DATA_URL_PREFIX.length) : undefined;
  },
  promptSent(request: RecordedRequest) {
    return userContent(request).find((part: any) => part.type === 'text')?.text;
  },
};

function userContent(request: RecordedRequest): any[] {
  return request.body.messages.find((message: any) => message.role === 'user').content;
}

testHostedReader(t, openai);

t.test('asks chat.completions for the shared schema as strict structured output', async (t) => {
  const { fake, image, reader } = await harness(t, openai);
  await reader().read(image, new AbortController().signal);

  const [request] = fake.requests;
  t.equal(request.path, '/v1/chat/completions');
  t.equal(request.headers.authorization, 'Bearer sk-test');
  t.same(request.body.response_format, {
    type: 'json_schema',
    json_schema: { name: 'meter_reading', strict: true, schema: METER_ANSWER_SCHEMA },
  });
  t.ok(userContent(request).some((part) => part.type === 'text' && part.text === METER_PROMPT));
});

t.test('an empty answer is unparseable', async (t) => {
  const { image, reader } = await harness(t, openai, { answer: '' });
  await t.rejects(reader().read(image, new AbortController().signal), { name: 'ReaderError', kind: 'unparseable' });
});
