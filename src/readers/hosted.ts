/**
 * What the hosted vision-model readers (openai.ts, anthropic.ts) share: the SDK client set-up, the
 * one prompt, the JSON schema of the answer, turning the model's answer into a MeterReading, and
 * turning SDK failures into ReaderErrors. Each reader keeps only its own wire format.
 */
import type { Config } from '../config.ts';
import type { MeterLayout } from './layout.ts';
import { clampConfidence, parseReading, ReaderError, type MeterReading } from './reader.ts';

export const METER_PROMPT = `You read mechanical water meters from photos. Report the number shown in the counter window.

How to read the counter:
- The counter is a row of number wheels behind a window. Black (or white-on-black) wheels count whole cubic metres; red wheels, or wheels on a red background, count fractions. Write the black wheels, then a decimal point ".", then the red wheels, e.g. "02390.276". If there are no red wheels, write no decimal point.
- Keep every leading zero exactly as the wheels show it: "00417", not "417".
- A wheel caught between two digits shows the lower one until the next digit is mostly in view; a wheel rolling from 9 to 0 still shows 9.
- Wheels carry like an odometer: a wheel turns only while the wheel to its right rolls from 9 to 0. So for a wheel between two digits, look at its right-hand neighbour: if that still shows 9 or is rolling from 9 to 0, read the lower digit; if it has already rolled over to 0, 1, 2 and so on, read the upper digit.
- Ignore every other number on the meter: serial numbers, year of manufacture, model codes, Qn/Q3 flow ratings, pointer dials and their scales, and printed "m³" or "x0.1" labels.
- Use only digits and at most one ".": no spaces, units or words.

Answer with:
- reading: the counter as described above, or "" if you cannot read it.
- confidence: an integer from 0 to 100 saying how sure you are that every digit is right.
- unobstructed: true if the whole counter is visible and sharp enough to read. If it is hidden, covered, fogged, too blurred, too dark, or there is no water meter counter in the photo, answer false with a low confidence and do not guess.`;

/**
 * The prompt for a photo of a meter whose layout is known (README "Plausibility"): METER_PROMPT and how many wheels
 * of each kind its counter has, so that the model writes every wheel (an answer in another layout is flagged). Not the
 * plausibility window: a model told where the reading should lie may write a value there rather than what the dial
 * shows, and the chain judges every answer against the window anyway.
 */
export function meterPrompt(layout?: Pick<MeterLayout, 'whole' | 'fraction'>): string {
  if (!layout) return METER_PROMPT;
  const { whole, fraction } = layout;
  const wheels = `${counted(whole, 'black whole-unit wheel')} and ${fraction ? counted(fraction, 'red wheel') : 'no red wheels'}`;
  const write = fraction
    ? `${counted(whole, 'digit')}, ".", then ${counted(fraction, 'digit')}`
    : `${counted(whole, 'digit')} and no "."`;
  return `${METER_PROMPT}\n\nThis meter's counter has ${wheels}: write ${write}.`;
}

function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

export interface MeterAnswer {
  reading: string;
  confidence: number;
  unobstructed: boolean;
}

/**
 * JSON schema of MeterAnswer; kept to the subset that OpenAI strict mode, vLLM, Ollama and Anthropic tools all accept.
 */
export const METER_ANSWER_SCHEMA = {
  type: 'object' as const,
  properties: {
    reading: {
      type: 'string',
      description: 'Counter digits with leading zeros and "." before the red fractional wheels; "" if unreadable.',
    },
    confidence: { type: 'integer', description: 'How sure, 0 to 100, that every digit is right.' },
    unobstructed: { type: 'boolean', description: 'false if the counter is hidden, blurred or absent.' },
  },
  required: ['reading', 'confidence', 'unobstructed'],
  additionalProperties: false,
};

export const JPEG_MEDIA_TYPE = 'image/jpeg';

/**
 * Parses an answer the model wrote as text. Structured output should make it bare JSON, but
 * OpenAI-compatible servers without schema support and instruction-following models may wrap it
 * in a Markdown code fence or a sentence.
 */
export function parseAnswerText(readerName: string, text: string): unknown {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start !== -1 && end > start) {
    try {
      return JSON.parse(text.slice(start, end + 1));
    } catch {
      // reported below, with the text the model wrote
    }
  }
  throw new ReaderError('unparseable', `${readerName}: answer is not JSON: ${excerpt(text)}`);
}

/** Turns the model's JSON answer into a reading, or says why it is not one. */
export function readingFromAnswer(readerName: string, answer: unknown, model: string): MeterReading {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
    throw new ReaderError(
      'unparseable',
      `${readerName}: answer is not a JSON object: ${excerpt(JSON.stringify(answer))}`,
    );
  }
  const { reading, confidence, unobstructed } = answer as Partial<Record<keyof MeterAnswer, unknown>>;
  if (unobstructed === false) {
    throw new ReaderError('unreadable', `${readerName}: the model says the counter is not readable`);
  }
  if (typeof reading !== 'string') {
    throw new ReaderError('unparseable', `${readerName}: answer has no reading: ${excerpt(JSON.stringify(answer))}`);
  }
  if (reading.trim() === '') {
    throw new ReaderError('unreadable', `${readerName}: the model gave an empty reading`);
  }
  const parsed = parseReading(reading);
  if (!parsed) {
    throw new ReaderError('unparseable', `${readerName}: "${excerpt(reading)}" is not a meter reading`);
  }
  return {
    ...parsed,
    // A missing or non-numeric confidence counts as none, so the chain escalates rather than trusts it.
    confidence: clampConfidence(typeof confidence === 'number' ? confidence : 0),
    model,
    raw: answer,
  };
}

/** The API settings of one hosted reader (config.openai, config.anthropic). */
export interface HostedApi {
  apiKey: string | undefined;
  baseUrl: string | undefined;
}

/**
 * Options of the vendor SDK's client. The SDKs default to a 600 s timeout and 2 retries; the
 * service's own settings replace them.
 */
export function sdkClientOptions(keyVariable: string, api: HostedApi, config: Config) {
  return {
    apiKey: apiKeyFor(keyVariable, api),
    baseURL: api.baseUrl,
    timeout: config.readerTimeoutMs,
    maxRetries: config.readerRetries,
  };
}

/**
 * Sends one request with the SDK. Every failure the SDK reports (`isSdkError`: its APIError) means
 * the model could not be asked: timeouts, aborts, connection errors, 429 and 5xx after the SDK's own
 * retries, and also 4xx such as a bad key or unknown model, which the contract has no other kind for.
 */
export async function askModel<Answer>(
  readerName: string,
  isSdkError: (error: unknown) => error is Error,
  request: () => Promise<Answer>,
): Promise<Answer> {
  try {
    return await request();
  } catch (error) {
    throw isSdkError(error) ? requestFailed(readerName, error) : error;
  }
}

export function requestFailed(readerName: string, error: Error & { status?: number }): ReaderError {
  const status = error.status === undefined ? '' : ` (HTTP ${error.status})`;
  return new ReaderError('unavailable', `${readerName}: request failed${status}: ${excerpt(error.message)}`, {
    cause: error,
  });
}

/**
 * The key to send. Self-hosted compatible servers (vLLM, Ollama) need none, but both SDKs refuse to
 * send a request without one; against the vendor's own API a missing key fails at start-up.
 */
function apiKeyFor(keyVariable: string, api: HostedApi): string {
  if (api.apiKey) return api.apiKey;
  if (api.baseUrl) return 'unused';
  throw new Error(`${keyVariable} is not set`);
}

function excerpt(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
