import { Readable } from 'node:stream';
import Fastify from 'fastify';
import sharp from 'sharp';
import t from 'tap';
import { loadConfig } from '../../src/config.ts';
import { DomainError } from '../../src/errors.ts';
import { checkImageHeader, ImageError, normaliseImage, sniffRasterFormat } from '../../src/images.ts';
import errorEnvelope from '../../src/plugins/app/error-envelope.ts';
import multipart from '../../src/plugins/external/multipart.ts';
import { readUpload, UPLOAD_TEXT_FIELDS } from '../../src/pipeline/validate-image.ts';
import { BOUNDARY, multipartBody } from '../helpers/raw-http.ts';

const solid = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: '#808080' } });

t.test('readUpload returns the image and the allowed text fields', async (t) => {
  const app = Fastify();
  await app.register(errorEnvelope);
  await app.register(multipart);
  app.post('/upload', async (request) => {
    const upload = await readUpload(request);
    return { bytes: upload.image.length, fields: upload.fields };
  });
  t.teardown(() => app.close());
  const post = (parts: Parameters<typeof multipartBody>[0]) =>
    app.inject({
      method: 'POST',
      url: '/upload',
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      payload: multipartBody(parts),
    });

  t.same(UPLOAD_TEXT_FIELDS, ['meter_id', 'previous_reading', 'previous_read_at']);
  const all = await post([
    { name: 'meter_id', body: 'flat 4 cold' },
    { name: 'image', filename: 'meter.jpg', body: 'JPEG BYTES' },
    { name: 'previous_reading', body: '00123.456' },
    { name: 'previous_read_at', body: 'not validated here' },
  ]);
  t.same(all.json(), {
    bytes: 10,
    fields: { meter_id: 'flat 4 cold', previous_reading: '00123.456', previous_read_at: 'not validated here' },
  });
  t.same(
    (await post([{ name: 'image', filename: 'meter.jpg', body: 'x' }])).json(),
    { bytes: 1, fields: {} },
    'the fields are optional',
  );
  const unknown = await post([
    { name: 'image', filename: 'meter.jpg', body: 'x' },
    { name: 'reading', body: '1' },
  ]);
  t.equal(unknown.statusCode, 422);
  t.match(unknown.json(), { errors: { image: [/Unexpected field "reading"/] } });

  const cut = `"${'n'.repeat(40)}…"`;
  const longName = await post([
    { name: 'n'.repeat(100_000), body: '1' },
    { name: 'image', filename: 'meter.jpg', body: 'x' },
  ]);
  t.equal(longName.statusCode, 422);
  t.same(longName.json(), {
    errors: {
      image: [
        `Unexpected field ${cut}: an upload has the file "image" and optionally meter_id, previous_reading, previous_read_at`,
      ],
    },
  });
  const longFileName = await post([{ name: 'n'.repeat(1000), filename: 'meter.jpg', body: 'x' }]);
  t.same(longFileName.json(), {
    errors: { image: [`Unexpected file field ${cut}: attach the meter photo in the field "image"`] },
  });
  const fortyOne = await post([{ name: `${'é'.repeat(40)}\u{1F4A7}`, body: '1' }]);
  t.match(fortyOne.json(), { errors: { image: [/^Unexpected field "é{40}…"/u] } }, 'cut by character');
  const forty = await post([{ name: 'é'.repeat(40), body: '1' }]);
  t.match(forty.json(), { errors: { image: [/^Unexpected field "é{40}":/u] } }, '40 characters are quoted whole');
});

t.test('a body that ends before its closing boundary is incomplete, whatever was read of it', async (t) => {
  const app = Fastify();
  await app.register(errorEnvelope);
  await app.register(multipart);
  app.post('/upload', async (request) => (await readUpload(request)).fields);
  t.teardown(() => app.close());
  const post = (payload: Buffer | string, boundary = BOUNDARY) =>
    app.inject({
      method: 'POST',
      url: '/upload',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload,
    });
  const image = { name: 'image', filename: 'meter.jpg', body: 'JPEG BYTES' };
  const complete = multipartBody([image]);
  const incomplete = {
    errors: { image: ['The upload is not a complete multipart/form-data body: it ends before its closing boundary'] },
  };

  t.same((await post(complete, 'XYZ')).json(), incomplete, 'a boundary the body never uses');
  t.same((await post('a meter, but no multipart at all', 'XYZ')).json(), incomplete, 'no part at all');
  t.same((await post('')).json(), incomplete, 'an empty body');
  t.same((await post(complete.subarray(0, 40))).json(), incomplete, 'cut inside the first part’s headers');
  t.match(
    (await post(multipartBody([image], { close: false }))).json(),
    { errors: { image: [/^The upload is not a complete multipart\/form-data body: /] } },
    'cut before its closing boundary',
  );

  t.equal((await post(complete)).statusCode, 200);
  t.equal((await post(complete, `"${BOUNDARY}"`)).statusCode, 200, 'a quoted boundary');
  t.equal((await post(`${complete}epilogue --${BOUNDARY}-`)).statusCode, 200, 'an epilogue after it');
  const chunked = await app.inject({
    method: 'POST',
    url: '/upload',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    payload: Readable.from([...complete].map((byte) => Buffer.from([byte]))),
  });
  t.equal(chunked.statusCode, 200, 'the closing boundary split over one-byte chunks');
  t.match(
    (await post(`--${BOUNDARY}--\r\n`)).json(),
    { errors: { image: [/^Missing the field "image"/] } },
    'a complete body without parts',
  );
});

t.test('the header check: accepted raster formats only, by signature, within the pixel limit', async (t) => {
  const maxPixels = loadConfig({}).maxImagePixels;
  t.equal(maxPixels, 50_000_000, 'the default pixel limit is 50 MP');
  for (const format of ['jpeg', 'png', 'webp', 'tiff', 'gif', 'avif'] as const) {
    const image = await solid(40, 30).toFormat(format).toBuffer();
    t.match(
      await checkImageHeader(image, { maxPixels }),
      { format: format === 'avif' ? 'heif' : format, width: 40, height: 30 },
      format,
    );
    t.equal(sniffRasterFormat(image), format === 'avif' ? 'heif' : format);
  }
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10000" height="9999"/>');
  await t.rejects(
    checkImageHeader(svg, { maxPixels }),
    new ImageError('The file is not an image in an accepted format (JPEG, PNG, WebP, AVIF/HEIF, TIFF or GIF)'),
  );
  const withXmlProlog = Buffer.from(`<?xml version="1.0"?>${svg}`);
  await t.rejects(checkImageHeader(withXmlProlog, { maxPixels }), ImageError, 'SVG with an XML prolog');
  await t.rejects(checkImageHeader(Buffer.from('%PDF-1.7'), { maxPixels }), ImageError, 'PDF');
  await t.rejects(
    checkImageHeader(await solid(200, 100).png().toBuffer(), { maxPixels: 10_000 }),
    /200×100 pixels \(0\.0 MP\); the limit is 0\.0 MP/,
  );
  t.notOk(new DomainError('invalid', 'image', 'x') instanceof ImageError);
});

t.test('an animated GIF is read by its first frame, and its pixels counted by one frame', async (t) => {
  const frames = await Promise.all(
    ['#ff0000', '#0000ff', '#00ff00'].map((background) =>
      sharp({ create: { width: 60, height: 40, channels: 3, background } })
        .png()
        .toBuffer(),
    ),
  );
  const animated = await sharp(frames, { join: { animated: true } })
    .gif()
    .toBuffer();
  t.equal((await sharp(animated).metadata()).pages, 3);
  t.match(
    await checkImageHeader(animated, { maxPixels: 60 * 40 }),
    { width: 60, height: 40 },
    'three frames of 2400 pixels pass a 2400 pixel limit',
  );
  const normalised = await normaliseImage(animated, { maxPixels: 60 * 40, longSide: 1600 });
  t.match(normalised, { width: 60, height: 40 });
  const { dominant } = await sharp(normalised.jpeg).stats();
  t.ok(dominant.r > 200 && dominant.b < 60, 'the first (red) frame');
});
