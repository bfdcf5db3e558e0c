import type {} from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { ImageError, MAX_IMAGE_BYTES, normaliseImage, type NormalisedImage } from '../images.ts';

const FIELD = 'image';

/** Step 4: the upload has an `image` field within the size limit that decodes as a picture. */
export async function validateImage(request: FastifyRequest, config: Config): Promise<NormalisedImage> {
  const upload = await readUpload(request);
  try {
    return await normaliseImage(upload, { maxPixels: config.maxImagePixels, longSide: config.normalisedLongSide });
  } catch (error) {
    if (error instanceof ImageError) throw imageError(error.message);
    throw error;
  }
}

async function readUpload(request: FastifyRequest): Promise<Buffer> {
  if (!request.isMultipart()) {
    throw imageError(`Send the photo as multipart/form-data in the field "${FIELD}"`);
  }
  for await (const part of request.parts({ limits: { fileSize: MAX_IMAGE_BYTES, files: 1 } })) {
    if (part.type !== 'file' || part.fieldname !== FIELD) continue;
    let upload: Buffer;
    try {
      upload = await part.toBuffer();
    } catch (error) {
      if ((error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge();
      throw error;
    }
    // toBuffer() can hand back the first 10 MiB of a larger upload without throwing.
    if (part.file.truncated || upload.length > MAX_IMAGE_BYTES) throw tooLarge();
    if (upload.length === 0) throw imageError(`The field "${FIELD}" holds an empty file`);
    return upload;
  }
  throw imageError(`Missing the field "${FIELD}": attach the meter photo as a file`);
}

function tooLarge(): ApiError {
  return imageError(`The image is larger than 10 MB (${MAX_IMAGE_BYTES} bytes)`);
}

function imageError(message: string): ApiError {
  return new ApiError(422, 'image', message);
}
