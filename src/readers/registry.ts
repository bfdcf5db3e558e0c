import type { Config } from '../config.ts';
import { createAnthropicReader } from './anthropic.ts';
import { ReaderChain } from './chain.ts';
import { createLocalReader } from './local.ts';
import { createOpenAIReader } from './openai.ts';
import type { MeterReader } from './reader.ts';

const READERS: Record<string, (config: Config) => MeterReader | undefined | Promise<MeterReader | undefined>> = {
  local: createLocalReader,
  openai: createOpenAIReader,
  anthropic: createAnthropicReader,
};

/**
 * READER_CHAIN when set (every name in it must be usable), otherwise the default: the offline
 * model first, then each hosted model whose API key is set, for what the cheaper reader is unsure of.
 */
export async function createReaderChain(config: Config): Promise<ReaderChain> {
  const readers: MeterReader[] = [];
  for (const name of config.readerChain ?? defaultChain(config)) {
    const create = READERS[name];
    if (!create)
      throw new Error(`READER_CHAIN names an unknown reader "${name}" (known: ${Object.keys(READERS).join(', ')})`);
    const reader = await create(config);
    if (reader) readers.push(reader);
    else if (config.readerChain)
      throw new Error(`READER_CHAIN names "${name}", which is not available (no model weights)`);
  }
  return new ReaderChain(readers, config);
}

function defaultChain(config: Config): string[] {
  return ['local', ...(config.openai.apiKey ? ['openai'] : []), ...(config.anthropic.apiKey ? ['anthropic'] : [])];
}
