import { availableParallelism } from 'node:os';
import sharp, { type Metadata } from 'sharp';

/**
 * libvips's operation cache keeps recent results for calls repeated with the same input, which never
 * come here (every upload differs). It kept decoded frames alive that its memory limit does not count
 * (a 50 MP GIF's, ~250 MB each): 20 costly uploads took a fresh web process to 1.4 GB (bench/README.md).
 */
sharp.cache(false);

/** The API's upload limit: 10 MB, counted in bytes as 10 × 1024 × 1024. */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;

/** The raster photo formats accepted, as sharp names them (AVIF is a HEIF). */
export const ACCEPTED_FORMATS = ['jpeg', 'png', 'webp', 'heif', 'tiff', 'gif'] as const;
export type AcceptedFormat = (typeof ACCEPTED_FORMATS)[number];
const ACCEPTED_FORMATS_TEXT = 'JPEG, PNG, WebP, AVIF/HEIF, TIFF or GIF';

/** What the header of an upload says: enough to accept it without decoding a pixel. */
export interface CheckedImage {
  upload: Buffer;
  format: AcceptedFormat;
  width: number;
  height: number;
}

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

/**
 * Reads only the file's signature and header (well under a millisecond): the format must be a
 * raster photo format, recognised from its first bytes before any decoder sees it (so SVG, PDF
 * and other vector or document formats never reach one), with dimensions within `maxPixels`.
 */
export async function checkImageHeader(upload: Buffer, options: { maxPixels: number }): Promise<CheckedImage> {
  const sniffed = sniffRasterFormat(upload);
  if (!sniffed) throw new ImageError(`The file is not an image in an accepted format (${ACCEPTED_FORMATS_TEXT})`);
  let metadata: Metadata;
  try {
    metadata = await sharp(upload, { limitInputPixels: false }).metadata();
  } catch {
    throw new ImageError(`The file is not an image that can be decoded (${ACCEPTED_FORMATS_TEXT})`);
  }
  const format = ACCEPTED_FORMATS.find((accepted) => accepted === metadata.format);
  if (!format) throw new ImageError(`The file is not an image in an accepted format (${ACCEPTED_FORMATS_TEXT})`);
  // Animated and multi-page images are read by their first frame only, so that frame is what counts.
  const { width } = metadata;
  const height = metadata.pageHeight ?? metadata.height;
  if (!width || !height) throw new ImageError('The file is not an image that can be decoded: it has no dimensions');
  if (width * height > options.maxPixels) {
    throw new ImageError(
      `The image has ${width}×${height} pixels (${megapixels(width * height)} MP); the limit is ${megapixels(options.maxPixels)} MP`,
    );
  }
  return { upload, format, width, height };
}

/**
 * Decodes the first frame, turns it upright from its EXIF orientation, scales it to `longSide`
 * and encodes it as JPEG: the image every reader reads and the dashboard shows. A burst of large
 * images queues (`imageWork`) instead of taking every core and the memory of each decoded frame at
 * the same time.
 */
export async function normaliseImage(
  input: Buffer,
  options: { maxPixels: number; longSide: number },
): Promise<NormalisedImage> {
  const checked = await checkImageHeader(input, options);
  return imageWork.run(checked.width * checked.height, options.maxPixels, async () => {
    try {
      const { data, info } = await sharp(input, { limitInputPixels: options.maxPixels, pages: 1 })
        .rotate()
        .resize({ width: options.longSide, height: options.longSide, fit: 'inside', withoutEnlargement: true })
        .jpeg({ quality: 90 })
        .toBuffer({ resolveWithObject: true });
      return {
        jpeg: data,
        width: info.width,
        height: info.height,
        originalFormat: checked.format,
        originalBytes: input.length,
      };
    } catch (error) {
      throw new ImageError(`The ${checked.format} image could not be decoded: ${(error as Error).message}`);
    }
  });
}

/** The format a file's first bytes announce, if it is one of the accepted raster formats. */
export function sniffRasterFormat(bytes: Buffer): AcceptedFormat | undefined {
  const ascii = (start: number, end: number) => bytes.toString('latin1', start, end);
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (ascii(0, 8) === '\x89PNG\r\n\x1a\n') return 'png';
  if (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a') return 'gif';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'webp';
  if (ascii(0, 4) === 'II*\0' || ascii(0, 4) === 'MM\0*') return 'tiff';
  if (ascii(4, 8) === 'ftyp' && HEIF_BRANDS.has(ascii(8, 12))) return 'heif';
  return undefined;
}

const HEIF_BRANDS = new Set(['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis', 'mif1', 'msf1', 'avif', 'avis']);

/** Decodes a process runs at once at most, for the CPU: half the cores, at least one. */
export const IMAGE_WORK_SLOTS = Math.max(1, Math.floor(availableParallelism() / 2));

/**
 * A first-come, first-served queue of tasks that each hold some pixels: at most `slots` run at once,
 * and together at most `budget` pixels (the pixel limit: one image at the limit, or several smaller
 * ones), so that the memory of the frames decoded at once has the same bound on any number of cores.
 * A task larger than the budget runs alone.
 */
export class DecodeQueue {
  readonly #slots: number;
  #running = 0;
  #pixels = 0;
  readonly #waiting: Array<{ pixels: number; budget: number; start: () => void }> = [];

  constructor(slots: number) {
    this.#slots = slots;
  }

  async run<T>(pixels: number, budget: number, task: () => Promise<T>): Promise<T> {
    await new Promise<void>((start) => {
      this.#waiting.push({ pixels, budget, start });
      this.#startWaiting();
    });
    try {
      return await task();
    } finally {
      this.#running -= 1;
      this.#pixels -= pixels;
      this.#startWaiting();
    }
  }

  /** In order: a task that does not fit yet holds back those behind it, so large images are not passed over forever. */
  #startWaiting(): void {
    for (let next = this.#waiting[0]; next !== undefined && this.#fits(next); next = this.#waiting[0]) {
      this.#waiting.shift();
      this.#running += 1;
      this.#pixels += next.pixels;
      next.start();
    }
  }

  #fits(task: { pixels: number; budget: number }): boolean {
    return this.#running === 0 || (this.#running < this.#slots && this.#pixels + task.pixels <= task.budget);
  }
}

const imageWork = new DecodeQueue(IMAGE_WORK_SLOTS);

function megapixels(pixels: number): string {
  return (pixels / 1e6).toFixed(1);
}
