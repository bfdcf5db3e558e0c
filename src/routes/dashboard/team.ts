import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  INVITATION_DAYS,
  INVITATION_PATH,
  inviteColleague,
  listPendingInvitations,
  removeColleague,
  requireOwner,
  withdrawInvitation,
} from '../../accounts/team.ts';
import { listUsers } from '../../accounts/users.ts';
import { isDomainError } from '../../errors.ts';
import type { Mailer } from '../../mail.ts';
import { dashboardUrl, pageStatus, sentence } from '../../plugins/app/page.ts';
import { accountId, signedInUser } from '../../plugins/app/session.ts';
import { EmailForm } from '../../schemas/dashboard-forms.ts';

type IdParams = { Params: { id: string } };

/**
 * /dashboard/team: everyone sees the account's people; an owner also invites colleagues (the link
 * is shown in that one response, and mailed with a mailer), withdraws invitations and removes people.
 */
const teamRoutes: FastifyPluginAsyncTypebox<{ mailer: Mailer | undefined }> = async (app, { mailer }) => {
  const { db } = app.deps;

  const teamPage = async (request: FastifyRequest, reply: FastifyReply, data: Record<string, unknown> = {}) =>
    reply.page('team', {
      title: 'Team',
      users: await listUsers(db, accountId(request)),
      invitations: await listPendingInvitations(db, accountId(request)),
      isOwner: signedInUser(request).role === 'owner',
      mailsInvitations: mailer !== undefined,
      invitationDays: INVITATION_DAYS,
      email: '',
      ...data,
    });

  app.get('/team', async (request, reply) => teamPage(request, reply));

  app.post('/team/invitations', { schema: { body: EmailForm } }, async (request, reply) => {
    const user = signedInUser(request);
    requireOwner(user);
    try {
      const invited = await inviteColleague(
        { db, mailer },
        {
          accountId: user.accountId,
          invitedBy: user.userId,
          email: request.body.email,
          acceptUrl: dashboardUrl(request, INVITATION_PATH),
        },
      );
      return teamPage(request, reply, { invited });
    } catch (error) {
      if (!isDomainError(error, 'invalid') && !isDomainError(error, 'refused')) throw error;
      return teamPage(request, reply.code(pageStatus(error)), {
        email: request.body.email,
        error: sentence(error.message),
      });
    }
  });

  app.post<IdParams>('/team/invitations/:id/delete', async (request, reply) => {
    requireOwner(signedInUser(request));
    await withdrawInvitation(db, accountId(request), request.params.id);
    return reply.redirect('/dashboard/team', 303);
  });

  app.post<IdParams>('/team/users/:id/delete', async (request, reply) => {
    const user = signedInUser(request);
    requireOwner(user);
    await removeColleague(db, { accountId: user.accountId, removedBy: user.userId, userId: request.params.id });
    return reply.redirect('/dashboard/team', 303);
  });
};

export default teamRoutes;
