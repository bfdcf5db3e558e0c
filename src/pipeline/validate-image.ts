import type { IncomingMessage } from 'node:http';
import type { MultipartFile, MultipartValue } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { DomainError, quoted } from '../errors.ts';
import { checkImageHeader, ImageError, MAX_IMAGE_BYTES, type CheckedImage } from '../images.ts';

const IMAGE_FIELD = 'image';
/** The optional text fields an upload may carry beside its photo; any other field is refused. */
export const UPLOAD_TEXT_FIELDS = ['meter_id', 'previous_reading', 'previous_read_at'] as const;
export type UploadTextField = (typeof UPLOAD_TEXT_FIELDS)[number];
export type UploadFields = Partial<Record<UploadTextField, string>>;

export interface Upload {
  image: Buffer;
  fields: UploadFields;
}

/**
 * What is left of a refused upload is read and dropped up to this many bytes, or for this long; then the connection is
 * closed.
 */
const DISCARD_LIMIT_BYTES = MAX_IMAGE_BYTES;
const DISCARD_TIMEOUT_MS = 10_000;

/**
 * Step 4: the upload is exactly one file, `image`, and the allowed text fields; its header says
 * it is a raster photo within the pixel limit. No pixel is decoded here: the read step does that.
 */
export async function validateImage(
  request: FastifyRequest,
  config: Config,
): Promise<{ image: CheckedImage; fields: UploadFields }> {
  const { image, fields } = await readUpload(request);
  try {
    return { image: await checkImageHeader(image, { maxPixels: config.maxImagePixels }), fields };
  } catch (error) {
    if (error instanceof ImageError) throw imageError(error.message);
    throw error;
  }
}

/**
 * Reads the multipart body to its end. Anything malformed is a 422 `image` the moment it is seen,
 * and the rest of the body is discarded so that the connection can carry the next request.
 */
export async function readUpload(request: FastifyRequest): Promise<Upload> {
  try {
    return await collectParts(request);
  } catch (error) {
    discardRestOfBody(request.raw);
    throw error instanceof DomainError ? error : imageError(multipartProblem(error));
  }
}

async function collectParts(request: FastifyRequest): Promise<Upload> {
  if (!request.isMultipart()) throw notMultipart();
  let image: Buffer | undefined;
  const fields: UploadFields = {};
  // One part beyond what is allowed of each kind, so that the extra one is named in the answer.
  const limits = {
    fileSize: MAX_IMAGE_BYTES,
    files: 2,
    fields: UPLOAD_TEXT_FIELDS.length + 1,
    parts: UPLOAD_TEXT_FIELDS.length + 3,
  };
  const closed = watchClosingDelimiter(request);
  for await (const part of request.parts({ limits })) {
    if (part.type === 'file') image = await readImagePart(part, image);
    else addTextField(fields, part);
  }
  if (!closed()) throw imageError(incompleteBody('it ends before its closing boundary'));
  if (!image) throw imageError(`Missing the field "${IMAGE_FIELD}": attach the meter photo as a file`);
  return { image, fields };
}

async function readImagePart(part: MultipartFile, earlier: Buffer | undefined): Promise<Buffer> {
  if (part.fieldname !== IMAGE_FIELD) {
    throw imageError(
      `Unexpected file field ${quoted(part.fieldname)}: attach the meter photo in the field "${IMAGE_FIELD}"`,
    );
  }
  if (earlier) throw imageError(`Send exactly one file in the field "${IMAGE_FIELD}"`);
  const upload = await part.toBuffer();
  // toBuffer() can hand back the first 10 MiB of a larger upload without throwing.
  if (part.file.truncated || upload.length > MAX_IMAGE_BYTES) throw tooLarge();
  if (upload.length === 0) throw imageError(`The field "${IMAGE_FIELD}" holds an empty file`);
  return upload;
}

function addTextField(fields: UploadFields, part: MultipartValue): void {
  const name = UPLOAD_TEXT_FIELDS.find((allowed) => allowed === part.fieldname);
  if (part.fieldname === IMAGE_FIELD) throw imageError(`The field "${IMAGE_FIELD}" must be a file, not text`);
  if (!name) {
    throw imageError(
      `Unexpected field ${quoted(part.fieldname)}: an upload has the file "${IMAGE_FIELD}" and optionally ${UPLOAD_TEXT_FIELDS.join(', ')}`,
    );
  }
  if (fields[name] !== undefined) throw imageError(`The field "${name}" is sent twice`);
  if (part.valueTruncated) throw imageError(`The field "${name}" is too long`);
  fields[name] = String(part.value);
}

/** The client's words for what @fastify/multipart and busboy refuse. */
function multipartProblem(error: unknown): string {
  switch ((error as { code?: string }).code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return tooLarge().message;
    case 'FST_FILES_LIMIT':
      return `Send exactly one file in the field "${IMAGE_FIELD}"`;
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
    case 'FST_PROTO_VIOLATION':
      return `Too many or unexpected fields: an upload has the file "${IMAGE_FIELD}" and optionally ${UPLOAD_TEXT_FIELDS.join(', ')}`;
    default:
      return incompleteBody((error as Error).message);
  }
}

function incompleteBody(reason: string): string {
  return `The upload is not a complete multipart/form-data body: ${reason}`;
}

/**
 * Whether the body's closing delimiter (`--boundary--`, RFC 2046) has gone by. @fastify/multipart ends the parts
 * quietly at a body that stops before it (busboy's "Unexpected end of multipart data"): an empty body, one cut
 * before its first part is whole, one whose Content-Type declares a boundary it never uses. Watched beside
 * busboy from the same tick as request.parts() pipes the body into it, so both see every chunk.
 */
function watchClosingDelimiter(request: FastifyRequest): () => boolean {
  const declared = /;\s*boundary=(?:"([^"]*)"|([^;\s]*))/i.exec(request.headers['content-type'] ?? '');
  const delimiter = Buffer.from(`\r\n--${declared?.[1] ?? declared?.[2] ?? ''}--`);
  // The body may open with it: busboy reads the first delimiter as if a line break came before it.
  let tail = Buffer.from('\r\n');
  let seen = false;
  const watch = (chunk: Buffer) => {
    const window = Buffer.concat([tail, chunk]);
    seen = window.includes(delimiter);
    if (seen) request.raw.off('data', watch);
    else tail = window.subarray(Math.max(0, window.length - delimiter.length + 1));
  };
  request.raw.on('data', watch);
  return () => seen;
}

/**
 * Reads and drops what is left of a refused request body, so the keep-alive connection is free
 * for the next request; a body that goes on too long or arrives too slowly closes it instead.
 */
export function discardRestOfBody(raw: IncomingMessage): void {
  if (raw.destroyed) return;
  raw.unpipe();
  if (!raw.complete) {
    let discarded = 0;
    const closeConnection = () => raw.socket.destroy();
    const deadline = setTimeout(closeConnection, DISCARD_TIMEOUT_MS).unref();
    raw.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > DISCARD_LIMIT_BYTES) closeConnection();
    });
    raw.once('end', () => clearTimeout(deadline));
    raw.once('close', () => clearTimeout(deadline));
  }
  raw.resume();
}

export function notMultipart(): DomainError {
  return imageError(`Send the photo as multipart/form-data in the field "${IMAGE_FIELD}"`);
}

function tooLarge(): DomainError {
  return imageError(`The image is larger than 10 MB (${MAX_IMAGE_BYTES} bytes)`);
}

function imageError(message: string): DomainError {
  return new DomainError('invalid', 'image', message);
}
