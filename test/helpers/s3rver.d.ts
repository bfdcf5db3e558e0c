/** The part of s3rver (no types of its own) the tests use. */
declare module 's3rver' {
  interface S3rverOptions {
    port: number;
    address: string;
    silent: boolean;
    directory: string;
    configureBuckets: Array<{ name: string; configs: string[] }>;
  }
  /** What a Koa middleware sees of a request and sets of its answer (s3rver is a Koa app). */
  interface Context {
    method: string;
    path: string;
    req: AsyncIterable<Buffer>;
    status: number;
    type: string;
    body: string;
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    /** Koa's middleware, in the order they run; run() composes them. */
    middleware: Array<(ctx: Context, next: () => Promise<void>) => Promise<void>>;
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
