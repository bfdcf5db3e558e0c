/** A synthetic meter photo: a JPEG of a counter window, rendered from SVG. */
import sharp from 'sharp';

export async function renderMeterPhoto(wholeUnits = '02390', fraction = '276'): Promise<Buffer> {
  const wheel = (digit: string, index: number, fill: string) =>
    `<rect x="${40 + index * 70}" y="60" width="60" height="100" fill="${fill}"/>` +
    `<text x="${70 + index * 70}" y="140" font-family="DejaVu Sans Mono, monospace" font-size="72" fill="white" text-anchor="middle">${digit}</text>`;
  const wheels = [
    ...[...wholeUnits].map((digit, index) => wheel(digit, index, 'black')),
    ...[...fraction].map((digit, index) => wheel(digit, wholeUnits.length + index, '#c00')),
  ];
  const width = 80 + (wholeUnits.length + fraction.length) * 70;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="220"><rect width="100%" height="100%" fill="#ddd"/>${wheels.join('')}</svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 85 }).toBuffer();
}
