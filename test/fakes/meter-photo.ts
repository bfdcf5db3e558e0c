/** Synthetic meter photos: JPEGs rendered from SVG. */
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

export interface Drawn {
  image: Buffer;
  counter: { left: number; top: number; width: number; height: number };
  /** Where the wheels start and end across the photo. */
  wheels: { left: number; right: number };
}

/**
 * A meter photo drawn from SVG: a dial on a grey wall, the counter window with 5 black and 3 red wheels
 * (white digits on dark wheels, as many meters print them), at `scale` times 700 x 500 px. With `logo`, the
 * counter's frame also holds a maker's letter left of the wheels.
 */
export async function drawMeter(
  wholeUnits: string,
  fraction: string,
  { scale = 1, logo = false } = {},
): Promise<Drawn> {
  const wheelWidth = 34,
    wheelHeight = 52,
    left = 350 - ((wholeUnits.length + fraction.length) * wheelWidth) / 2,
    top = 200;
  const wheels = [...(wholeUnits + fraction)]
    .map((digit, i) => {
      const x = left + i * wheelWidth;
      const fill = i < wholeUnits.length ? '#111' : '#b00';
      return (
        `<rect x="${x + 2}" y="${top + 4}" width="${wheelWidth - 4}" height="${wheelHeight - 8}" fill="${fill}"/>` +
        `<text x="${x + wheelWidth / 2}" y="${top + 40}" font-family="DejaVu Sans" font-size="34" fill="#f4f4f4" text-anchor="middle">${digit}</text>`
      );
    })
    .join('');
  const width = (wholeUnits.length + fraction.length) * wheelWidth;
  const frameLeft = left - 6 - (logo ? 60 : 0);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${700 * scale}" height="${500 * scale}" viewBox="0 0 700 500">
    <rect width="700" height="500" fill="#8a8f94"/>
    <circle cx="350" cy="240" r="210" fill="#e9e9e4" stroke="#555" stroke-width="14"/>
    <text x="350" y="150" font-family="DejaVu Sans" font-size="22" fill="#333" text-anchor="middle">m³  CB-15</text>
    <rect x="${frameLeft}" y="${top - 4}" width="${left + width + 6 - frameLeft}" height="${wheelHeight + 8}" fill="#ccc" stroke="#222" stroke-width="3"/>
    ${wheels}
    ${logo ? `<text x="${left - 35}" y="${top + 40}" font-family="DejaVu Sans" font-size="30" fill="#222" text-anchor="middle">M</text>` : ''}
    <circle cx="420" cy="340" r="30" fill="none" stroke="#b00" stroke-width="3"/></svg>`;
  const image = await sharp(Buffer.from(svg)).jpeg({ quality: 88 }).toBuffer();
  return {
    image,
    counter: {
      left: frameLeft * scale,
      top: (top - 4) * scale,
      width: (left + width + 6 - frameLeft) * scale,
      height: (wheelHeight + 8) * scale,
    },
    wheels: { left: left * scale, right: (left + width) * scale },
  };
}
