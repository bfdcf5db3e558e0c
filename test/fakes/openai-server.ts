/** Fake OpenAI-compatible server: POST {url}/chat/completions answers like the real API. */
import { answerText, startFakeApi, type FakeBehaviour, type FakeServer } from './http-fake.ts';

export function startFakeOpenAI(behaviour?: FakeBehaviour): Promise<FakeServer> {
  return startFakeApi(
    {
      basePath: '/v1',
      endpoint: '/v1/chat/completions',
      answer(_request, answer, model, sequence) {
        return {
          id: `chatcmpl-fake${sequence}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: answerText(answer), refusal: null, annotations: [] },
              logprobs: null,
              finish_reason: 'stop',
            },
          ],
          usage: { prompt_tokens: 1200, completion_tokens: 20, total_tokens: 1220 },
        };
      },
      error(status, message) {
        return {
          error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null },
        };
      },
    },
    behaviour,
  );
}
