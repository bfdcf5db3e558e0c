import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createApiKey, deleteApiKey, listApiKeys, setApiKeyStatus } from '../../accounts/api-keys.ts';
import { InvalidInputError } from '../../accounts/errors.ts';
import type { ApiKeyStatus } from '../../db/schema.ts';
import { sentence } from '../../plugins/app/page.ts';
import { accountId } from '../../plugins/app/session.ts';

type KeyParams = { Params: { id: string } };

/** /dashboard/keys: list, create (the key is shown in that one response only), enable, disable, delete. */
export default async function keyRoutes(app: FastifyInstance): Promise<void> {
  const { db } = app.deps;

  const keysPage = async (request: FastifyRequest, reply: FastifyReply, data: Record<string, unknown> = {}) =>
    reply.page('keys', { title: 'API Keys', keys: await listApiKeys(db, accountId(request)), projectName: '', ...data });

  app.get('/keys', async (request, reply) => keysPage(request, reply));

  app.post<{ Body: { project_name?: string; status?: string } }>('/keys', async (request, reply) => {
    const projectName = request.body.project_name ?? '';
    const status: ApiKeyStatus = request.body.status === 'inactive' ? 'inactive' : 'active';
    try {
      const created = await createApiKey(db, { accountId: accountId(request), projectName, status });
      return keysPage(request, reply, { newKey: { ...created, projectName: projectName.trim() } });
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      return keysPage(request, reply.code(400), { error: sentence(error.message), projectName });
    }
  });

  for (const [action, status] of [['enable', 'active'], ['disable', 'inactive']] as const) {
    app.post<KeyParams>(`/keys/:id/${action}`, async (request, reply) => {
      await setApiKeyStatus(db, accountId(request), request.params.id, status);
      return reply.redirect('/dashboard/keys', 303);
    });
  }

  app.post<KeyParams>('/keys/:id/delete', async (request, reply) => {
    await deleteApiKey(db, accountId(request), request.params.id);
    return reply.redirect('/dashboard/keys', 303);
  });
}
