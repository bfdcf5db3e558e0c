import Anthropic from '@anthropic-ai/sdk';
import type { Config } from '../config.ts';
import {
  askModel,
  JPEG_MEDIA_TYPE,
  METER_ANSWER_SCHEMA,
  meterPrompt,
  parseAnswerText,
  readingFromAnswer,
  sdkClientOptions,
} from './hosted.ts';
import type { MeterLayout } from './layout.ts';
import type { MeterReader, MeterReading, PlausibilityWindow } from './reader.ts';

const NAME = 'anthropic';
const ANSWER_TOOL = 'record_meter_reading';
/** The answer is a few dozen tokens; this only bounds a model that rambles. */
const MAX_ANSWER_TOKENS = 512;

/**
 * Reads meters with Claude over /v1/messages. A forced tool call makes the model answer with
 * JSON matching the schema; a plain text answer (from compatible servers that ignore tools) is
 * parsed as JSON too.
 */
export function createAnthropicReader(config: Config): MeterReader {
  const { model } = config.anthropic;
  const client = new Anthropic(sdkClientOptions('ANTHROPIC_API_KEY', config.anthropic, config));

  return {
    name: NAME,
    hosted: true,
    async read(
      image: Buffer,
      signal: AbortSignal,
      _window?: PlausibilityWindow,
      layout?: MeterLayout,
    ): Promise<MeterReading> {
      const message = await askModel(NAME, isAnthropicError, () =>
        client.messages.create(
          {
            model,
            max_tokens: MAX_ANSWER_TOKENS,
            tools: [
              {
                name: ANSWER_TOOL,
                description: 'Record the reading of the water meter counter in the photo.',
                input_schema: METER_ANSWER_SCHEMA,
              },
            ],
            tool_choice: { type: 'tool', name: ANSWER_TOOL },
            messages: [
              {
                role: 'user',
                content: [
                  {
                    type: 'image',
                    source: { type: 'base64', media_type: JPEG_MEDIA_TYPE, data: image.toString('base64') },
                  },
                  { type: 'text', text: meterPrompt(layout) },
                ],
              },
            ],
          },
          { signal },
        ),
      );

      const toolCall = message.content.find((block) => block.type === 'tool_use' && block.name === ANSWER_TOOL);
      const answer =
        toolCall?.type === 'tool_use'
          ? toolCall.input
          : parseAnswerText(NAME, message.content.map((block) => (block.type === 'text' ? block.text : '')).join(''));
      return readingFromAnswer(NAME, answer, message.model || model);
    },
  };
}

const isAnthropicError = (error: unknown) => error instanceof Anthropic.APIError;
