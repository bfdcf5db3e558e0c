/**
 * Worker thread that owns the ONNX sessions: onnxruntime-node runs a session synchronously on the thread that
 * calls it, so reading here keeps the service's event loop free while a photo is read.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { MeterLayout } from '../layout.ts';
import { ReaderError, type PlausibilityWindow } from '../reader.ts';
import { loadMeterModel } from './model.ts';

export interface ReadRequest {
  id: number;
  image: Uint8Array;
  window?: PlausibilityWindow;
  layout?: MeterLayout;
}
export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'failed-to-load'; message: string }
  | { type: 'result'; id: number; reading: import('../reader.ts').MeterReading }
  | { type: 'error'; id: number; kind: ReaderError['kind']; message: string };

const port = parentPort!;
const post = (message: WorkerMessage) => port.postMessage(message);

try {
  const { modelDir, threads } = workerData as { modelDir: string; threads: number };
  const model = await loadMeterModel(modelDir, threads);
  port.on('message', async ({ id, image, window, layout }: ReadRequest) => {
    try {
      post({
        type: 'result',
        id,
        reading: await model.read(Buffer.from(image.buffer, image.byteOffset, image.byteLength), window, layout),
      });
    } catch (error) {
      const kind = error instanceof ReaderError ? error.kind : 'unavailable';
      post({ type: 'error', id, kind, message: error instanceof Error ? error.message : String(error) });
    }
  });
  post({ type: 'ready' });
} catch (error) {
  post({ type: 'failed-to-load', message: error instanceof Error ? error.message : String(error) });
}
