import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  deletedEndpointDeliveries,
  recentDeliveries,
  webhookEndpoint,
  webhookSecret,
} from '../../dashboard/webhooks.ts';
import { isDomainError } from '../../errors.ts';
import { sentence } from '../../plugins/app/page.ts';
import { accountId } from '../../plugins/app/session.ts';
import { TestEventForm, WebhookEndpointForm } from '../../schemas/dashboard-forms.ts';
import { redeliver, sendTestEvent } from '../../webhooks/deliver.ts';
import {
  addWebhookEndpoint,
  deleteWebhookEndpoint,
  listWebhookEndpoints,
  rotateWebhookSecret,
  setWebhookEndpointEnabled,
  updateWebhookEndpoint,
} from '../../webhooks/endpoints.ts';
import { DEFAULT_WEBHOOK_EVENTS, TEST_EVENT_KINDS, WEBHOOK_EVENTS } from '../../webhooks/events.ts';

type EndpointParams = { Params: { id: string } };
type EndpointForm = { url: string; events: readonly string[] };
type EditParams = EndpointParams & { Body: WebhookEndpointForm };

/**
 * /dashboard/webhooks: endpoints (add, edit, delete), their signing secrets (shown only in the
 * response to an explicit POST), test events, recent deliveries with their attempts and redelivery.
 */
const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, boss, config } = app.deps;

  const listPage = async (request: FastifyRequest, reply: FastifyReply, data: Record<string, unknown> = {}) =>
    reply.page('webhooks', {
      title: 'Webhooks',
      endpoints: await listWebhookEndpoints(db, accountId(request)),
      deletedEndpointDeliveries: await deletedEndpointDeliveries(db, accountId(request)),
      events: WEBHOOK_EVENTS,
      form: { url: '', events: DEFAULT_WEBHOOK_EVENTS },
      ...data,
    });

  const endpointPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    id: string,
    extra: { secret?: { value: string; reason: string }; error?: string; form?: EndpointForm } = {},
  ) => {
    const endpoint = await webhookEndpoint(db, accountId(request), id);
    return reply.page('webhook', {
      title: 'Webhook endpoint',
      section: 'webhooks',
      endpoint,
      events: WEBHOOK_EVENTS,
      form: { url: endpoint.url, events: endpoint.events },
      testEventKinds: TEST_EVENT_KINDS,
      deliveries: await recentDeliveries(db, endpoint.id),
      ...extra,
    });
  };
  /** A bad URL or events (400), or a URL taken or the endpoints at their cap (409): the form stays filled in. */
  const formError = (error: unknown) => {
    if (!isDomainError(error, 'invalid') && !isDomainError(error, 'conflict')) throw error;
    return { status: error.kind === 'invalid' ? 400 : 409, error: sentence(error.message) };
  };
  const backTo = (reply: FastifyReply, id: string) =>
    reply.redirect(`/dashboard/webhooks/${encodeURIComponent(id)}`, 303);

  app.get('/webhooks', async (request, reply) => listPage(request, reply));

  app.post('/webhooks', { schema: { body: WebhookEndpointForm } }, async (request, reply) => {
    const url = request.body.url.trim();
    const { events } = request.body;
    try {
      const { id, secret } = await addWebhookEndpoint(db, config, { accountId: accountId(request), url, events });
      return endpointPage(request, reply, id, { secret: { value: secret, reason: 'created' } });
    } catch (error) {
      const refused = formError(error);
      return listPage(request, reply.code(refused.status), { error: refused.error, form: { url, events } });
    }
  });

  app.get<EndpointParams>('/webhooks/:id', async (request, reply) => endpointPage(request, reply, request.params.id));

  app.post<EndpointParams>('/webhooks/:id/secret', async (request, reply) => {
    const secret = await webhookSecret(db, accountId(request), request.params.id);
    return endpointPage(request, reply, request.params.id, { secret: { value: secret, reason: 'shown' } });
  });

  app.post<EndpointParams>('/webhooks/:id/rotate-secret', async (request, reply) => {
    const { secret } = await rotateWebhookSecret(db, accountId(request), request.params.id);
    return endpointPage(request, reply, request.params.id, { secret: { value: secret, reason: 'rotated' } });
  });

  app.post<EditParams>('/webhooks/:id/edit', { schema: { body: WebhookEndpointForm } }, async (request, reply) => {
    const url = request.body.url.trim();
    const { events } = request.body;
    try {
      await updateWebhookEndpoint(db, config, { accountId: accountId(request), id: request.params.id, url, events });
      return backTo(reply, request.params.id);
    } catch (error) {
      const refused = formError(error);
      return endpointPage(request, reply.code(refused.status), request.params.id, {
        error: refused.error,
        form: { url, events },
      });
    }
  });

  app.post<EndpointParams>('/webhooks/:id/delete', async (request, reply) => {
    await deleteWebhookEndpoint(db, accountId(request), request.params.id);
    return reply.redirect('/dashboard/webhooks', 303);
  });

  for (const [action, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    app.post<EndpointParams>(`/webhooks/:id/${action}`, async (request, reply) => {
      await setWebhookEndpointEnabled(db, accountId(request), request.params.id, enabled);
      return backTo(reply, request.params.id);
    });
  }

  app.post<EndpointParams & { Body: TestEventForm }>(
    '/webhooks/:id/test',
    { schema: { body: TestEventForm } },
    async (request, reply) => {
      await sendTestEvent(db, boss, accountId(request), request.params.id, request.body.kind);
      return backTo(reply, request.params.id);
    },
  );

  app.post<{ Params: { id: string; deliveryId: string } }>(
    '/webhooks/:id/deliveries/:deliveryId/redeliver',
    async (request, reply) => {
      await redeliver(db, boss, accountId(request), request.params.deliveryId);
      return backTo(reply, request.params.id);
    },
  );
};

export default webhookRoutes;
