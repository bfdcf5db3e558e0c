import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { API_KEY_FORMAT } from '../../accounts/api-key-format.ts';
import { ERROR_ENVELOPE_POINTER } from '../../schemas/meter-reading.ts';
import { componentPointer, namedSchemas } from '../../schemas/named.ts';
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
\`X-Request-Id\`: the client's own (1–128 characters of \`A-Za-z0-9._:-\`) or a generated UUID; the logs carry it too.

Lists come a page at a time, newest or in meter_id order as each says: \`limit\` items, \`has_more\`, and
\`next_cursor\` (null on the last page), which the next request passes back as \`starting_after\`, with the
same filters. A cursor is opaque: pass it back as it came. A meter's history also takes \`cursor\`, the
old name of \`starting_after\`.`;

const WEBHOOK_HEADERS = [
  { name: 'webhook-id', description: 'The event’s id, the same on every retry of it' },
  { name: 'webhook-timestamp', description: 'Unix seconds when this attempt was signed' },
  {
    name: 'webhook-signature',
    description:
      '`v1,<base64 HMAC-SHA256>` of `id.timestamp.body` with the endpoint’s `whsec_…` secret (Standard Webhooks)',
  },
].map(({ name, description }) => ({
  name,
  in: 'header',
  required: true,
  description,
  schema: { type: 'string' as const },
}));

/** An event as it is POSTed to the client's endpoints (OpenAPI 3.1 `webhooks`). */
function webhook({ summary, operationId, payload }: (typeof WEBHOOK_PAYLOADS)[number]) {
  return {
    post: {
      operationId,
      summary,
      // Signed (the headers above), not authenticated by a key.
      security: [],
      parameters: WEBHOOK_HEADERS,
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: componentPointer(payload) } } } },
      responses: {
        '2XX': {
          description:
            'Delivered. Anything else is retried (5 s, 30 s, 2 min, … over about 3 days); 410 disables the endpoint',
        },
      },
    },
  };
}

/**
 * GET /openapi.json, generated from the TypeBox schemas of the API routes registered after this
 * plugin, and GET /docs, a reference page whose assets come from the npm package (no CDN).
 * The dashboard stays out of the document. The named schemas (schemas/named.ts) are shared with
 * every route, which Fastify resolves them for, and are the document's components.schemas.
 */
export default fp(async (app: FastifyInstance) => {
  for (const schema of namedSchemas()) app.addSchema(schema);
  await app.register(swagger, {
    refResolver: {
      buildLocalReference: (schema: { $id?: string }, _baseUri: unknown, _fragment: string, i: number) =>
        schema.$id ?? `def-${i}`,
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Meterlens API',
        version: '1',
        description: DESCRIPTION,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // Where this document is served: every deployment has its own address.
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: API_KEY_FORMAT },
        },
      },
      webhooks: Object.fromEntries(WEBHOOK_PAYLOADS.map((event) => [event.event, webhook(event)])),
    },
    transform: ({ schema = {}, url }) => {
      const { documentation, ...validated } = schema;
      if (url === '/healthz' || url === '/readyz') return { schema: { ...validated, security: [] }, url };
      if (!url.startsWith('/api/')) return { schema: { ...validated, hide: true }, url };
      return { schema: { ...validated, ...documentation, security: [{ bearerAuth: [] }] }, url };
    },
    transformObject: (document) =>
      'openapiObject' in document
        ? withRequestIdHeaders(withRefusalsAroundRoutes(document.openapiObject))
        : document.swaggerObject,
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { url: '/openapi.json', deepLinking: true },
    staticCSP:
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
});

interface Operation {
  parameters?: Array<{ in: string }>;
  requestBody?: { content?: Record<string, unknown> };
  responses?: Record<string, { description?: string; content?: object }>;
}

/**
 * What any operation may answer besides its own: Node's parser, the router, Fastify's body parser,
 * request-deadline, require-host, graceful-close and a database outage refuse a request before or
 * around its route (docs/api.md, "Errors").
 */
const REFUSALS_AROUND_ROUTES: Array<{
  status: string;
  description: string;
  applies?: (operation: Operation) => boolean;
}> = [
  {
    status: '400',
    description:
      '`request`: not valid HTTP, an HTTP/1.1 request without Host, or a URL path that is not valid percent-encoding',
  },
  {
    status: '408',
    description:
      '`request`: the headers or body did not arrive within REQUEST_TIMEOUT_SECONDS (60 s by default); the connection is closed',
  },
  {
    status: '413',
    description: '`request`: a JSON body over 1 MiB',
    applies: (operation) => operation.requestBody?.content?.['application/json'] !== undefined,
  },
  {
    status: '414',
    description: '`request`: a part of the URL path longer than 100 characters',
    applies: (operation) => operation.parameters?.some((parameter) => parameter.in === 'path') ?? false,
  },
  { status: '417', description: '`request`: an `Expect` header other than `100-continue`; the connection is closed' },
  { status: '431', description: '`request`: headers over 16 KB; the connection is closed' },
  {
    status: '503',
    description:
      '`server`: the process is shutting down (`Retry-After: 1`); `database`: the database cannot be reached (`Retry-After: 10`)',
  },
];

/**
 * Adds REFUSALS_AROUND_ROUTES to every operation; where it documents the status already, the description tells both.
 */
function withRefusalsAroundRoutes<T extends { paths?: object }>(document: T): T {
  for (const operations of Object.values(document.paths ?? {}) as Array<Record<string, Operation>>) {
    for (const operation of Object.values(operations)) {
      operation.responses ??= {};
      const responses = operation.responses;
      for (const { status, description, applies } of REFUSALS_AROUND_ROUTES) {
        if (applies && !applies(operation)) continue;
        const own = responses[status];
        responses[status] = own
          ? { ...own, description: `${own.description}. Also ${description}` }
          : { description, content: { 'application/json': { schema: ERROR_ENVELOPE_POINTER } } };
      }
    }
  }
  return document;
}

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
