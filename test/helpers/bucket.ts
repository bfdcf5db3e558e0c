import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

const BUCKET = 'meterlens-photos';

export interface TestBucket {
  /** PHOTO_STORE and the AWS SDK's variables that point the service at this bucket. */
  env: Record<string, string>;
  /** Every object in the bucket, as `s3://bucket/key`. */
  objects(): Promise<string[]>;
  /** An outage: the server stops, its port answers nothing. */
  stop(): Promise<void>;
  /** Back on the same port with the same objects. */
  start(): Promise<void>;
  /**
   * A partial outage: from now on every PUT of a key that matches `key` is answered 503, as an
   * overloaded S3 answers, while every other request is served; null serves them all again.
   */
  refusePuts(key: RegExp | null): void;
}

/** What closes the bucket: a tap test, or a benchmark's cleanups. */
interface Teardown {
  teardown(close: () => Promise<void>): void;
}

/** A real S3 protocol server (s3rver) on loopback with one bucket, files in a scratch folder; closed in teardown. */
export async function startTestBucket(t: Teardown, prefix = 'photos'): Promise<TestBucket> {
  const directory = await mkdtemp(path.join(tmpdir(), 'meterlens-s3-'));
  let port = 0;
  let server: S3rver | undefined;
  let refused: RegExp | null = null;
  const start = async () => {
    if (server) return;
    server = new S3rver({
      port,
      address: '127.0.0.1',
      silent: true,
      directory,
      configureBuckets: [{ name: BUCKET, configs: [] }],
    });
    // Ahead of s3rver's own middleware (Koa runs them in order), before run() composes them.
    server.middleware.unshift(async (ctx, next) => {
      if (ctx.method !== 'PUT' || !refused?.test(ctx.path)) return next();
      for await (const _chunk of ctx.req);
      ctx.status = 503;
      ctx.type = 'application/xml';
      ctx.body =
        '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>';
    });
    port = (await server.run()).port;
  };
  const stop = async () => {
    await server?.close();
    server = undefined;
  };
  await start();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  t.teardown(async () => {
    client.destroy();
    await stop();
    await rm(directory, { recursive: true, force: true });
  });
  return {
    env: {
      PHOTO_STORE: `s3://${BUCKET}/${prefix}`,
      AWS_ENDPOINT_URL_S3: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
    async objects() {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: BUCKET }));
      return (listed.Contents ?? []).map((object) => `s3://${BUCKET}/${object.Key}`).sort();
    },
    stop,
    start,
    refusePuts(key) {
      refused = key;
    },
  };
}
