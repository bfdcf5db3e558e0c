import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MIN_PASSWORD_LENGTH } from '../../accounts/passwords.ts';
import { acceptInvitation, INVITATION_PATH, openInvitation } from '../../accounts/team.ts';
import { isDomainError } from '../../errors.ts';
import { pageStatus, sentence } from '../../plugins/app/page.ts';
import { LinkQuery, NewPasswordForm } from '../../schemas/dashboard-forms.ts';

/** The page an invitation link opens (open: the invited person has no user yet). */
const invitationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps;

  const invitationPage = async (token: string) => {
    const { email, accountName } = await openInvitation(db, token);
    return {
      title: `Join ${accountName}`,
      intro: `You are invited to ${accountName} on Meterlens. Choose a password: you will sign in as ${email}.`,
      action: INVITATION_PATH,
      submitLabel: 'Join',
      minPasswordLength: MIN_PASSWORD_LENGTH,
      token,
    };
  };

  app.get('/invitation', { schema: { querystring: LinkQuery } }, async (request, reply) =>
    reply.page('new-password', await invitationPage(request.query.token)),
  );

  app.post('/invitation', { schema: { body: NewPasswordForm } }, async (request, reply) => {
    const { token, password, password_confirmation: passwordConfirmation } = request.body;
    let userId: string;
    try {
      ({ userId } = await acceptInvitation(db, { token, password, passwordConfirmation }));
    } catch (error) {
      if (!isDomainError(error, 'invalid') || error.field === 'token') throw error;
      return reply
        .code(pageStatus(error))
        .page('new-password', { ...(await invitationPage(token)), error: sentence(error.message) });
    }
    await reply.signIn(userId);
    return reply.redirect('/dashboard', 303);
  });
};

export default invitationRoutes;
