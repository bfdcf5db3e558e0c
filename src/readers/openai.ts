import OpenAI from 'openai';
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
import { ReaderError, type MeterReader, type MeterReading, type PlausibilityWindow } from './reader.ts';

const NAME = 'openai';

/**
 * Reads meters with any server that speaks OpenAI's chat.completions: OpenAI itself, vLLM, Ollama.
 * Chat completions with an image_url data URL and a json_schema response_format is the subset
 * they all implement; the newer /responses API is not.
 */
export function createOpenAIReader(config: Config): MeterReader {
  const { model } = config.openai;
  const client = new OpenAI(sdkClientOptions('OPENAI_API_KEY', config.openai, config));

  return {
    name: NAME,
    hosted: true,
    async read(
      image: Buffer,
      signal: AbortSignal,
      _window?: PlausibilityWindow,
      layout?: MeterLayout,
    ): Promise<MeterReading> {
      const completion = await askModel(NAME, isOpenAIError, () =>
        client.chat.completions.create(
          {
            model,
            messages: [
              {
                role: 'user',
                content: [
                  {
                    type: 'image_url',
                    image_url: { url: `data:${JPEG_MEDIA_TYPE};base64,${image.toString('base64')}`, detail: 'high' },
                  },
                  { type: 'text', text: meterPrompt(layout) },
                ],
              },
            ],
            response_format: {
              type: 'json_schema',
              json_schema: { name: 'meter_reading', strict: true, schema: METER_ANSWER_SCHEMA },
            },
          },
          { signal },
        ),
      );

      const message = completion.choices[0]?.message;
      if (!message?.content) {
        const why = message?.refusal ? `the model refused: ${message.refusal}` : 'the answer is empty';
        throw new ReaderError('unparseable', `${NAME}: ${why}`);
      }
      return readingFromAnswer(NAME, parseAnswerText(NAME, message.content), completion.model || model);
    },
  };
}

const isOpenAIError = (error: unknown) => error instanceof OpenAI.APIError;
