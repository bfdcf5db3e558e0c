import type {} from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { ImageError, MAX_IMAGE_BYTES, normaliseImage, type NormalisedImage } from '../images.ts';

const FIELD = 'image';
/** The text fields a submission may carry beside the photo, checked by identify-meter. */
const TEXT_FIELDS = ['meter_id', 'previous_reading', 'previous_read_at'] as const;
export type SubmissionFields = { [name in (typeof TEXT_FIELDS)[number]]?: string };

/** Step 4: the upload has an `image` field within the size limit that decodes as a picture. */
export async function validateImage(request: FastifyRequest, config: Config): Promise<{ image: NormalisedImage; fields: SubmissionFields }> {
  const { upload, fields } = await readUpload(request);
  try {
    const image = await normaliseImage(upload, { maxPixels: config.maxImagePixels, longSide: config.normalisedLongSide });
    return { image, fields };
  } catch (error) {
    if (error instanceof ImageError) throw imageError(error.message);
    throw error;
  }
}

async function readUpload(request: FastifyRequest): Promise<{ upload: Buffer; fields: SubmissionFields }> {
  if (!request.isMultipart()) {
    throw imageError(`Send the photo as multipart/form-data in the field "${FIELD}"`);
  }
  const fields: SubmissionFields = {};
  let upload: Buffer | undefined;
  for await (const part of request.parts({ limits: { fileSize: MAX_IMAGE_BYTES, files: 1, fieldSize: 1024 } })) {
    if (part.type === 'field') {
      const name = TEXT_FIELDS.find((field) => field === part.fieldname);
      if (name && fields[name] === undefined) fields[name] = String(part.value);
      continue;
    }
    if (part.fieldname !== FIELD) continue;
    try {
      upload = await part.toBuffer();
    } catch (error) {
      if ((error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge();
      throw error;
    }
    // toBuffer() can hand back the first 10 MiB of a larger upload without throwing.
    if (part.file.truncated || upload.length > MAX_IMAGE_BYTES) throw tooLarge();
    if (upload.length === 0) throw imageError(`The field "${FIELD}" holds an empty file`);
  }
  if (!upload) throw imageError(`Missing the field "${FIELD}": attach the meter photo as a file`);
  return { upload, fields };
}

function tooLarge(): ApiError {
  return imageError(`The image is larger than 10 MB (${MAX_IMAGE_BYTES} bytes)`);
}

function imageError(message: string): ApiError {
  return new ApiError(422, 'image', message);
}
