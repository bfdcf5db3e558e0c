/** Fake Anthropic server: POST {url}/v1/messages answers like the real API. */
import { answerText, startFakeApi, type FakeBehaviour, type FakeServer } from './http-fake.ts';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

export function startFakeAnthropic(behaviour?: FakeBehaviour): Promise<FakeServer> {
  return startFakeApi(
    {
      basePath: '',
      endpoint: '/v1/messages',
      answer(request, answer, model, sequence) {
        // Like Claude: a forced tool is answered with a tool_use block, anything else with text.
        const forcedTool =
          request.body?.tool_choice?.type === 'tool' ? String(request.body.tool_choice.name) : undefined;
        const useTool = forcedTool !== undefined && typeof answer !== 'string';
        return {
          id: `msg_fake${sequence}`,
          type: 'message',
          role: 'assistant',
          model,
          content: useTool
            ? [{ type: 'tool_use', id: `toolu_fake${sequence}`, name: forcedTool, input: answer }]
            : [{ type: 'text', text: answerText(answer) }],
          stop_reason: useTool ? 'tool_use' : 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 1200, output_tokens: 20 },
        };
      },
      error(status, message) {
        return { type: 'error', error: { type: ERROR_TYPES[status] ?? 'api_error', message } };
      },
    },
    behaviour,
  );
}
