import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  createApiKey,
  deleteApiKey,
  listApiKeys,
  PROJECT_NAME_MAX_LENGTH,
  setApiKeyStatus,
} from '../../accounts/api-keys.ts';
import { isDomainError } from '../../errors.ts';
import { pageStatus, sentence } from '../../plugins/app/page.ts';
import { accountId } from '../../plugins/app/session.ts';
import { ApiKeyForm } from '../../schemas/dashboard-forms.ts';

type KeyParams = { Params: { id: string } };

/** /dashboard/keys: list, create (the key is shown in that one response only), enable, disable, delete. */
const keyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps;

  const keysPage = async (request: FastifyRequest, reply: FastifyReply, data: Record<string, unknown> = {}) =>
    reply.page('keys', {
      title: 'API Keys',
      keys: await listApiKeys(db, accountId(request)),
      projectName: '',
      projectNameMaxLength: PROJECT_NAME_MAX_LENGTH,
      ...data,
    });

  app.get('/keys', async (request, reply) => keysPage(request, reply));

  app.post('/keys', { schema: { body: ApiKeyForm } }, async (request, reply) => {
    const { project_name: projectName, status } = request.body;
    try {
      const created = await createApiKey(db, { accountId: accountId(request), projectName, status });
      return keysPage(request, reply, { newKey: { ...created, projectName: projectName.trim() } });
    } catch (error) {
      // A bad name, or keys at their bound: the form comes back with the message, the name kept.
      if (!isDomainError(error, 'invalid') && !isDomainError(error, 'refused')) throw error;
      return keysPage(request, reply.code(pageStatus(error)), { error: sentence(error.message), projectName });
    }
  });

  for (const [action, status] of [
    ['enable', 'active'],
    ['disable', 'inactive'],
  ] as const) {
    app.post<KeyParams>(`/keys/:id/${action}`, async (request, reply) => {
      await setApiKeyStatus(db, accountId(request), request.params.id, status);
      return reply.redirect('/dashboard/keys', 303);
    });
  }

  app.post<KeyParams>('/keys/:id/delete', async (request, reply) => {
    await deleteApiKey(db, accountId(request), request.params.id);
    return reply.redirect('/dashboard/keys', 303);
  });
};

export default keyRoutes;
