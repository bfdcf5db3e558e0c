import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { API_KEY_FORMAT } from '../../accounts/api-key-format.ts';
import { WEBHOOK_PAYLOADS } from '../../schemas/webhook-events.ts';
import { REQUEST_ID_HEADER } from '../app/request-id.ts';

declare module 'fastify' {
  interface FastifySchema {
    /**
     * Request parts a route checks itself, to answer its own 422s rather than a schema's 400
     * (or, for the multipart upload, because it streams the body): in the document, not validated.
     */
    documentation?: Pick<FastifySchema, 'params' | 'querystring' | 'body'>;
  }
}

const DESCRIPTION = `Meterlens reads water meters from photos. Upload a photo and get the reading by signed webhook
(\`POST /api/meter-reading\`) or in the response (\`POST /api/meter-reading/sync\`); fetch any result
later by its \`reference_id\`.

Every error has the envelope \`{"errors":{"<field>":["<message>"]}}\`. Every response carries
\`X-Request-Id\`: the client's own (1–128 characters of \`A-Za-z0-9._:-\`) or a generated UUID; the logs carry it too.`;

const WEBHOOK_HEADERS = [
  { name: 'webhook-id', description: 'The event’s id, the same on every retry of it' },
  { name: 'webhook-timestamp', description: 'Unix seconds when this attempt was signed' },
  { name: 'webhook-signature', description: '`v1,<base64 HMAC-SHA256>` of `id.timestamp.body` with the endpoint’s `whsec_…` secret (Standard Webhooks)' },
].map(({ name, description }) => ({ name, in: 'header', required: true, description, schema: { type: 'string' as const } }));

/** An event as it is POSTed to the client's endpoints (OpenAPI 3.1 `webhooks`). */
function webhook(summary: string, payload: object) {
  return {
    post: {
      summary,
      parameters: WEBHOOK_HEADERS,
      requestBody: { required: true, content: { 'application/json': { schema: payload } } },
      responses: { '2XX': { description: 'Delivered. Anything else is retried (5 s, 30 s, 2 min, … over about 3 days); 410 disables the endpoint' } },
    },
  };
}

/**
 * GET /openapi.json, generated from the TypeBox schemas of the API routes registered after this
 * plugin, and GET /docs, a reference page whose assets come from the npm package (no CDN).
 * The dashboard stays out of the document.
 */
export default fp(async (app: FastifyInstance) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Meterlens API', version: '1', description: DESCRIPTION },
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: API_KEY_FORMAT },
        },
      },
      webhooks: Object.fromEntries(WEBHOOK_PAYLOADS.map(({ event, summary, payload }) => [event, webhook(summary, payload)])),
    },
    transform: ({ schema = {}, url }) => {
      const { documentation, ...validated } = schema;
      if (url === '/healthz' || url === '/readyz') return { schema: validated, url };
      if (!url.startsWith('/api/')) return { schema: { ...validated, hide: true }, url };
      return { schema: { ...validated, ...documentation, security: [{ bearerAuth: [] }] }, url };
    },
    transformObject: (document) => ('openapiObject' in document ? withRequestIdHeaders(document.openapiObject) : document.swaggerObject),
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { url: '/openapi.json', deepLinking: true },
    staticCSP:
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
});

/** Every response of every operation carries X-Request-Id. */
function withRequestIdHeaders<T extends { paths?: object }>(document: T): T {
  for (const operations of Object.values(document.paths ?? {}) as Array<Record<string, { responses?: object }>>) {
    for (const operation of Object.values(operations)) {
      for (const response of Object.values(operation.responses ?? {}) as Array<{ headers?: object }>) {
        response.headers = {
          ...response.headers,
          [REQUEST_ID_HEADER]: { description: 'The request’s id, as the logs carry it', schema: { type: 'string' } },
        };
      }
    }
  }
  return document;
}
