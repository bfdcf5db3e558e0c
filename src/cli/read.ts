import { readFile } from 'node:fs/promises';
import type { Config } from '../config.ts';
import { ImageError, normaliseImage } from '../images.ts';
import { ReadFailure, type ChainReading, type ReaderChain } from '../readers/chain.ts';
import { UsageError } from './args.ts';
import type { Command } from './context.ts';

export const readCommand: Command = {
  name: 'read',
  synopsis: 'FILE…',
  description: 'read meter photos with the configured readers, without the database; exit 1 if any failed',
  positionals: true,
  async run({ config, output }, args) {
    if (args.positionals.length === 0) throw new UsageError('name at least one image file');
    // The readers' SDKs and model runtime load only here, not for every other command.
    const { createReaderChain } = await import('../readers/registry.ts');
    const chain = await createReaderChain(config);
    let failures = 0;
    for (const file of args.positionals) {
      const outcome = await readPhoto(file, chain, config);
      if ('error' in outcome) {
        failures += 1;
        output.print({ file, error: outcome.error }, `${file}: ${outcome.error.code}: ${outcome.error.message}`);
      } else {
        const { reading, value, confidence, model, reader, escalated } = outcome;
        output.print(
          { file, reading, value, confidence, model, reader, escalated },
          `${file}: ${reading} (confidence ${confidence}, ${reader}/${model}${escalated ? ', escalated' : ''})`,
        );
      }
    }
    return failures ? 1 : 0;
  },
};

type PhotoOutcome =
  | ChainReading
  | { error: { code: 'file_unreadable' | 'invalid_image' | ReadFailure['code']; message: string } };

/** A file that cannot be read, decoded or recognised is reported for that file; the others still run. */
async function readPhoto(file: string, chain: ReaderChain, config: Config): Promise<PhotoOutcome> {
  let buffer: Buffer;
  try {
    buffer = await readFile(file);
  } catch (error) {
    return { error: { code: 'file_unreadable', message: (error as Error).message } };
  }
  try {
    const image = await normaliseImage(buffer, {
      maxPixels: config.maxImagePixels,
      longSide: config.normalisedLongSide,
    });
    return await chain.read(image.jpeg);
  } catch (error) {
    if (error instanceof ImageError) return { error: { code: 'invalid_image', message: error.message } };
    if (error instanceof ReadFailure) return { error: { code: error.code, message: error.message } };
    throw error;
  }
}
