import type { ServiceDeps } from '../deps.ts';
import { observeReaderAttempts } from '../metrics.ts';
import type { MeterPhoto } from '../photos/meter-photos.ts';
import { ReadFailure, type ChainReading } from '../readers/chain.ts';
import { judgeUsual } from '../readers/judge-reading.ts';
import { normaliseUpload } from './normalise.ts';
import type { ReadContext } from './expect-reading.ts';

/**
 * Step 6: the photo read through the reader chain within the meter's plausibility window and
 * layout, then judged against its usual consumption (suspicious). An upload
 * is normalised first; a retried job finds the upright JPEG its first attempt stored. Every reader
 * the chain asked is counted in the metrics, whatever came of it.
 */
export async function readPhoto(
  deps: Pick<ServiceDeps, 'db' | 'photos' | 'config' | 'readers'>,
  submissionId: string,
  photo: MeterPhoto,
  context: Pick<ReadContext, 'window' | 'usual' | 'layout'>,
  signal?: AbortSignal,
): Promise<ChainReading> {
  const jpeg = photo.jpeg ?? (await normaliseUpload(deps, submissionId, photo.upload!));
  try {
    const reading = await deps.readers.read(jpeg, signal, context.window, context.layout);
    observeReaderAttempts(reading.attempts);
    return judgeUsual(reading, context.usual);
  } catch (error) {
    if (error instanceof ReadFailure) observeReaderAttempts(error.attempts);
    throw error;
  }
}
