import { existsSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.ts';
import { MODEL_FILES } from './local/model.ts';
import type { ReadRequest, WorkerMessage } from './local/inference-thread.ts';
import type { MeterLayout } from './layout.ts';
import { ReaderError, type MeterReader, type MeterReading, type PlausibilityWindow } from './reader.ts';

/**
 * The offline reader: the models in `config.localModelDir`, loaded once in a worker thread.
 * Undefined when the weights are not there.
 */
export async function createLocalReader(config: Config): Promise<MeterReader | undefined> {
  if (!MODEL_FILES.every((file) => existsSync(path.join(config.localModelDir, file)))) return undefined;
  const worker = new Worker(new URL('./local/inference-thread.ts', import.meta.url), {
    workerData: { modelDir: config.localModelDir, threads: config.localReaderThreads },
  });
  await new Promise<void>((resolve, reject) => {
    const onMessage = (message: WorkerMessage) => {
      worker.off('error', reject);
      worker.off('message', onMessage);
      if (message.type === 'ready') resolve();
      else
        reject(
          new Error(
            `local model failed to load: ${message.type === 'failed-to-load' ? message.message : message.type}`,
          ),
        );
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
  });
  return new LocalReader(worker);
}

interface Pending {
  resolve: (reading: MeterReading) => void;
  reject: (error: Error) => void;
}

class LocalReader implements MeterReader {
  readonly name = 'local';
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;

  constructor(worker: Worker) {
    this.#worker = worker;
    worker.on('message', (message: WorkerMessage) => this.#settle(message));
    worker.on('error', (error) => this.#failAll(`local reader worker crashed: ${error.message}`));
    worker.on('exit', (code) => this.#failAll(`local reader worker exited (${code})`));
    // An idle worker must not keep a CLI process alive.
    worker.unref();
  }

  read(image: Buffer, signal: AbortSignal, window?: PlausibilityWindow, layout?: MeterLayout): Promise<MeterReading> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const id = this.#nextId++;
    return new Promise<MeterReading>((resolve, reject) => {
      const onAbort = () => {
        // The worker finishes the photo anyway; its answer is then dropped.
        this.#forget(id);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        resolve: (reading) => {
          signal.removeEventListener('abort', onAbort);
          resolve(reading);
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      });
      this.#worker.ref();
      this.#worker.postMessage({ id, image: new Uint8Array(image), window, layout } satisfies ReadRequest);
    });
  }

  #settle(message: WorkerMessage): void {
    if (message.type !== 'result' && message.type !== 'error') return;
    const pending = this.#pending.get(message.id);
    this.#forget(message.id);
    if (!pending) return;
    if (message.type === 'error') pending.reject(new ReaderError(message.kind, message.message));
    else pending.resolve(message.reading);
  }

  #forget(id: number): void {
    this.#pending.delete(id);
    if (this.#pending.size === 0) this.#worker.unref();
  }

  #failAll(message: string): void {
    for (const pending of this.#pending.values()) pending.reject(new ReaderError('unavailable', message));
    this.#pending.clear();
  }
}
