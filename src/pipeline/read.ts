import type { ServiceDeps } from '../deps.ts';
import { observeReaderAttempts } from '../metrics.ts';
import type { MeterPhoto } from '../photos/meter-photos.ts';
import { ReadFailure, type ChainReading } from '../readers/chain.ts';
import type { PlausibilityWindow } from '../readers/reader.ts';
import { normaliseUpload } from './normalise.ts';

/**
 * Step 6: the photo read through the reader chain within the meter's plausibility window. An upload
 * is normalised first; a retried job finds the upright JPEG its first attempt stored. Every reader
 * the chain asked is counted in the metrics, whatever came of it.
 */
export async function readPhoto(
  deps: Pick<ServiceDeps, 'db' | 'photos' | 'config' | 'readers'>,
  meterId: string,
  photo: MeterPhoto,
  window: PlausibilityWindow | undefined,
  signal?: AbortSignal,
): Promise<ChainReading> {
  const jpeg = photo.jpeg ?? (await normaliseUpload(deps, meterId, photo.upload!));
  try {
    const reading = await deps.readers.read(jpeg, signal, window);
    observeReaderAttempts(reading.attempts);
    return reading;
  } catch (error) {
    if (error instanceof ReadFailure) observeReaderAttempts(error.attempts);
    throw error;
  }
}
