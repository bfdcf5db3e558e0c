import type { Config } from '../config.ts';
import { ImageError, normaliseImage, type NormalisedImage } from '../images.ts';
import { keepNormalised, type PhotoDeps } from '../photos/meter-photos.ts';
import { ReadFailure } from '../readers/chain.ts';

/**
 * Step 6, first half: the upload is decoded (first frame), turned upright, scaled to
 * `normalisedLongSide` and stored (where PHOTO_STORE says) as the JPEG the readers read and the
 * dashboard shows, in place of the upload. An upload that passed the header check but does not
 * decode is `invalid_image`.
 */
export async function normaliseUpload(
  deps: PhotoDeps & { config: Config },
  submissionId: string,
  upload: Buffer,
): Promise<Buffer> {
  const { config } = deps;
  let image: NormalisedImage;
  try {
    image = await normaliseImage(upload, { maxPixels: config.maxImagePixels, longSide: config.normalisedLongSide });
  } catch (error) {
    if (error instanceof ImageError) throw new ReadFailure('invalid_image', error.message, []);
    throw error;
  }
  await keepNormalised(deps, submissionId, image);
  return image.jpeg;
}
