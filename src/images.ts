import sharp, { type Metadata } from 'sharp';

/** The API's upload limit: 10 MB, counted in bytes as 10 × 1024 × 1024. */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;

export interface NormalisedImage {
  /** Upright (EXIF orientation applied), long side at most `longSide`, JPEG. */
  jpeg: Buffer;
  width: number;
  height: number;
  originalFormat: string;
  originalBytes: number;
}

/** A message for the client saying what is wrong with the file. */
export class ImageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageError';
  }
}

export async function normaliseImage(
  input: Buffer,
  options: { maxPixels: number; longSide: number },
): Promise<NormalisedImage> {
  let metadata: Metadata;
  try {
    metadata = await sharp(input, { limitInputPixels: false }).metadata();
  } catch {
    throw new ImageError('The file is not an image that can be decoded (JPEG, PNG, WebP, AVIF/HEIF, TIFF or GIF)');
  }
  const { width, height, format } = metadata;
  if (!width || !height) throw new ImageError('The file is not an image that can be decoded: it has no dimensions');
  if (width * height > options.maxPixels) {
    throw new ImageError(
      `The image has ${width}×${height} pixels (${megapixels(width * height)} MP); the limit is ${megapixels(options.maxPixels)} MP`,
    );
  }
  try {
    const { data, info } = await sharp(input, { limitInputPixels: options.maxPixels })
      .rotate()
      .resize({ width: options.longSide, height: options.longSide, fit: 'inside', withoutEnlargement: true })
      .jpeg({ quality: 90 })
      .toBuffer({ resolveWithObject: true });
    return { jpeg: data, width: info.width, height: info.height, originalFormat: format, originalBytes: input.length };
  } catch (error) {
    throw new ImageError(`The ${format} image could not be decoded: ${(error as Error).message}`);
  }
}

function megapixels(pixels: number): string {
  return (pixels / 1e6).toFixed(1);
}
