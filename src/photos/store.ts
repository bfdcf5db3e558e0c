import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { Config } from '../config.ts';
import { DomainError, isDomainError } from '../errors.ts';

/**
 * Where a submission_photos row keeps one photo: its bytes, or the object that holds them
 * (`s3://bucket/key`). Only this module and meter-photos.ts look inside.
 */
export interface PhotoPlace {
  bytes: Buffer | null;
  object: string | null;
}

/** The bucket and key prefix PHOTO_STORE names. */
export interface Bucket {
  name: string;
  /** Empty, or ending in `/`. */
  prefix: string;
}

/** The API's error field when the store cannot be reached. */
const PHOTOS_FIELD = 'photos';

/** Seconds a client should wait before retrying while the photo store cannot be reached. */
const STORE_RETRY_AFTER_SECONDS = 10;

/**
 * The bucket does not answer in time: each S3 request gives up after these, so an outage answers
 * 503 promptly instead of holding the request (the SDK's own default waits forever).
 */
const CONNECTION_TIMEOUT_MS = 3_000;
const REQUEST_TIMEOUT_MS = 30_000;

/** DeleteObjects takes at most this many keys. */
const DELETE_BATCH = 1000;

/**
 * Where photos go and where they are read from. New photos go to the bucket PHOTO_STORE names, or
 * into the row (`database`); a photo already stored is read and deleted wherever its row says it
 * is, whatever PHOTO_STORE says now, so rows of both kinds work while `meterlens photos migrate` runs.
 */
export class PhotoStore {
  /** Where `put` writes; undefined: the database. */
  readonly bucket: Bucket | undefined;
  readonly #s3: () => S3Client;

  constructor(settings: Config['photoStore']) {
    this.bucket = parseBucket(settings.location);
    let client: S3Client | undefined;
    // Made on first use: a database store whose rows point at no object never needs one.
    this.#s3 = () => (client ??= s3Client(settings));
  }

  /** Stores `bytes` as `name` under the bucket's prefix, or hands them back to be written into the row. */
  async put(name: string, bytes: Buffer): Promise<PhotoPlace> {
    const bucket = this.bucket;
    if (!bucket) return { bytes, object: null };
    const key = `${bucket.prefix}${name}`;
    await this.#call((s3) => s3.send(new PutObjectCommand({ Bucket: bucket.name, Key: key, Body: bytes })));
    return { bytes: null, object: objectUrl(bucket.name, key) };
  }

  /** The photo's bytes; undefined when its object is gone (deleted while the row was being read). */
  async get(place: PhotoPlace): Promise<Buffer | undefined> {
    if (place.bytes) return place.bytes;
    if (!place.object) return undefined;
    const { bucket, key } = parseObjectUrl(place.object);
    try {
      return await this.#call(async (s3) => {
        const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return Buffer.from(await object.Body!.transformToByteArray());
      });
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      throw error;
    }
  }

  /** Deletes these objects (nulls and objects already gone are passed over). */
  async remove(objects: Array<string | null>): Promise<void> {
    const byBucket = new Map<string, string[]>();
    for (const object of objects) {
      if (!object) continue;
      const { bucket, key } = parseObjectUrl(object);
      byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), key]);
    }
    for (const [bucket, keys] of byBucket) {
      for (let start = 0; start < keys.length; start += DELETE_BATCH) {
        const batch = keys.slice(start, start + DELETE_BATCH).map((Key) => ({ Key }));
        const result = await this.#call((s3) =>
          s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch, Quiet: true } })),
        );
        const failed = result.Errors ?? [];
        if (failed.length > 0)
          throw new Error(`${failed.length} photo objects were not deleted: ${failed[0]!.Key}: ${failed[0]!.Message}`);
      }
    }
  }

  /** The objects under the bucket's prefix last written before `cutoff`, a page (up to 1000) at a time. */
  async *listOlderThan(cutoff: Date): AsyncGenerator<string[]> {
    const bucket = this.bucket;
    if (!bucket) return;
    let token: string | undefined;
    do {
      const page = await this.#call((s3) =>
        s3.send(new ListObjectsV2Command({ Bucket: bucket.name, Prefix: bucket.prefix, ContinuationToken: token })),
      );
      yield (page.Contents ?? [])
        .filter((object) => object.Key && object.LastModified && object.LastModified < cutoff)
        .map((object) => objectUrl(bucket.name, object.Key!));
      token = page.NextContinuationToken;
    } while (token);
  }

  async #call<T>(request: (s3: S3Client) => Promise<T>): Promise<T> {
    try {
      return await request(this.#s3());
    } catch (error) {
      throw isOutage(error) ? storeUnavailable(error) : error;
    }
  }
}

function s3Client(settings: Config['photoStore']): S3Client {
  return new S3Client({
    // Unset: the SDK's own chain (profiles, instance roles).
    credentials: settings.credentials,
    region: settings.region ?? (settings.endpoint ? 'us-east-1' : undefined),
    endpoint: settings.endpoint,
    // S3-compatible servers (MinIO, Ceph, R2, s3rver) are addressed by path; AWS by virtual host.
    forcePathStyle: settings.endpoint !== undefined,
    // Checksums only where S3 requires them: several S3-compatible servers refuse the SDK's default CRC headers.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 2,
    requestHandler: { connectionTimeout: CONNECTION_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS },
  });
}

/**
 * No answer, a server error or throttling: the store may be back soon. Anything else (access denied, no such bucket) is
 * the operator's to fix.
 */
function isOutage(error: unknown): boolean {
  // The SDK's network errors (refused, reset, timed out) carry $metadata but no HTTP status.
  if (!(error instanceof S3ServiceException))
    return typeof (error as { $metadata?: unknown } | null)?.$metadata === 'object';
  const status = error.$metadata.httpStatusCode ?? 0;
  return status === 0 || status >= 500 || status === 429;
}

/** Whether the photo store could not be reached (the error `PhotoStore` throws then). */
export function isPhotoStoreUnavailable(error: unknown): boolean {
  return isDomainError(error, 'unavailable') && error.field === PHOTOS_FIELD;
}

function storeUnavailable(cause: unknown): DomainError {
  const error = new DomainError('unavailable', PHOTOS_FIELD, 'The photo store is unavailable. Try again shortly.', {
    headers: { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) },
  });
  error.cause = cause;
  return error;
}

/** The bucket and prefix of `s3://bucket/prefix` (config.ts checks the form); undefined for `database`. */
export function parseBucket(location: string): Bucket | undefined {
  if (!location.startsWith('s3://')) return undefined;
  const { bucket, key } = parseObjectUrl(location);
  const prefix = key.replace(/^\/+|\/+$/g, '');
  return { name: bucket, prefix: prefix ? `${prefix}/` : '' };
}

function objectUrl(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

function parseObjectUrl(url: string): { bucket: string; key: string } {
  const path = url.slice('s3://'.length);
  const slash = path.indexOf('/');
  return slash < 0 ? { bucket: path, key: '' } : { bucket: path.slice(0, slash), key: path.slice(slash + 1) };
}
