/**
 * A field app as a customer would write it against a client generated from /openapi.json
 * (openapi-typescript's types, openapi-fetch's calls): test/routes/openapi-client.test.ts generates
 * `meterlens-api.ts` beside it, type-checks both with no casts allowed, and runs it against a real
 * service. Usage: node field-app.ts <base URL> <API key> <photo>
 */
import { readFile } from 'node:fs/promises';
import createClient from 'openapi-fetch';
import type { components, paths } from './meterlens-api.ts';

type PhotoUpload = components['schemas']['PhotoUpload'];

const [baseUrl, key, photoPath] = process.argv.slice(2);
if (!baseUrl || !key || !photoPath) throw new Error('usage: node field-app.ts <base URL> <API key> <photo>');
const client = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${key}` } });
const photo = new Blob([await readFile(photoPath)], { type: 'image/jpeg' });

/** The multipart body the upload operations take, as a browser or Node sends a form. */
function multipart(body: PhotoUpload): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(body)) if (value !== undefined) form.append(name, value);
  return form;
}

const sync = await client.POST('/api/meter-reading/sync', {
  body: { image: photo, meter_id: 'FIELD-1' },
  bodySerializer: multipart,
});
if (!sync.data) throw new Error(`sync submission refused: ${JSON.stringify(sync.error?.errors)}`);
const readNow: string = sync.data.reading;

const accepted = await client.POST('/api/meter-reading', {
  body: { image: photo, meter_id: 'FIELD-1' },
  bodySerializer: multipart,
});
if (!accepted.data) throw new Error(`submission refused: ${JSON.stringify(accepted.error?.errors)}`);
const referenceId = accepted.data.reference_id;

/** The submission once it has finished, asked for every 100 ms. */
async function finished(referenceId: string) {
  for (;;) {
    const { data, error } = await client.GET('/api/meter-reading/{reference_id}', {
      params: { path: { reference_id: referenceId } },
    });
    if (!data) throw new Error(`no result: ${JSON.stringify(error.errors)}`);
    if (data.status === 'completed' || data.status === 'failed') return data;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const submission = await finished(referenceId);
if (submission.status === 'failed') throw new Error(`not read: ${submission.error.code}`);
// A completed submission's reading, value and confidence are there, no optional chaining needed.
const readLater: { reading: string; value: number; confidence: number; needs_review: boolean } = submission;

const corrected = await client.POST('/api/meter-reading/{reference_id}/correction', {
  params: { path: { reference_id: referenceId } },
  body: { reading: '02390.300' },
});
if (corrected.data?.status !== 'completed' || !corrected.data.correction)
  throw new Error('the correction did not stick');
const correctedTo: string = corrected.data.correction.reading;

const history: string[] = [];
let startingAfter: string | undefined;
do {
  const page = await client.GET('/api/meters/{meter_id}/readings', {
    params: { path: { meter_id: 'FIELD-1' }, query: { limit: 1, starting_after: startingAfter } },
  });
  if (!page.data) throw new Error(`no history: ${JSON.stringify(page.error.errors)}`);
  history.push(...page.data.readings.map((reading) => reading.reference_id));
  startingAfter = page.data.next_cursor ?? undefined;
} while (startingAfter !== undefined);

const refused = await client.GET('/api/meter-readings', { params: { query: { limit: 1000 } } });
const refusal: string[] | undefined = refused.error?.errors.limit;

console.log(JSON.stringify({ readNow, readLater: readLater.reading, correctedTo, history, refusal }));
