import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MIN_PASSWORD_LENGTH } from '../../accounts/passwords.ts';
import {
  mailResetLink,
  openResetLink,
  RESET_LINK_HOURS,
  RESET_PASSWORD_PATH,
  reserveResetRequest,
  resetPassword,
} from '../../accounts/password-reset.ts';
import { DomainError, isDomainError } from '../../errors.ts';
import type { Mailer } from '../../mail.ts';
import { dashboardUrl, pageStatus, sentence } from '../../plugins/app/page.ts';
import { EmailForm, LinkQuery, NewPasswordForm } from '../../schemas/dashboard-forms.ts';

/**
 * "Forgot password" (with a mailer) and the page its link opens (also the link `meterlens users
 * reset-link` prints): open pages, like sign-in.
 */
const passwordResetRoutes: FastifyPluginAsyncTypebox<{ mailer: Mailer | undefined }> = async (app, { mailer }) => {
  const { db } = app.deps;
  const forgotPage = { title: 'Forgot your password?', mailsLinks: mailer !== undefined, linkHours: RESET_LINK_HOURS };
  const resetPage = {
    title: 'Choose a new password',
    intro: 'Every browser signed in with your old password will be signed out.',
    action: RESET_PASSWORD_PATH,
    submitLabel: 'Set new password',
    minPasswordLength: MIN_PASSWORD_LENGTH,
  };

  app.get('/forgot-password', async (_request, reply) => reply.page('forgot-password', { ...forgotPage, email: '' }));

  app.post('/forgot-password', { schema: { body: EmailForm } }, async (request, reply) => {
    if (!mailer)
      throw new DomainError(
        'unavailable',
        'mail',
        'This service sends no mail. Ask its operator for a link to reset your password.',
      );
    const { email } = request.body;
    try {
      await reserveResetRequest(db, { email, ip: request.ip });
    } catch (error) {
      if (!isDomainError(error, 'invalid') && !isDomainError(error, 'refused')) throw error;
      return reply
        .code(pageStatus(error))
        .page('forgot-password', { ...forgotPage, email, error: sentence(error.message) });
    }
    // Answered before looking the email up: the same page, as fast, whether or not it has a user.
    mailResetLink({ db, mailer }, { email, resetUrl: dashboardUrl(request, RESET_PASSWORD_PATH) }).catch((error) =>
      request.log.error({ err: error }, 'the password reset mail was not sent'),
    );
    return reply.page('forgot-password', { ...forgotPage, email, sent: true });
  });

  app.get('/reset-password', { schema: { querystring: LinkQuery } }, async (request, reply) => {
    await openResetLink(db, request.query.token);
    return reply.page('new-password', { ...resetPage, token: request.query.token });
  });

  app.post('/reset-password', { schema: { body: NewPasswordForm } }, async (request, reply) => {
    const { token, password, password_confirmation: passwordConfirmation } = request.body;
    let userId: string;
    try {
      ({ userId } = await resetPassword(db, { token, password, passwordConfirmation }));
    } catch (error) {
      if (!isDomainError(error, 'invalid') || error.field === 'token') throw error;
      return reply
        .code(pageStatus(error))
        .page('new-password', { ...resetPage, token, error: sentence(error.message) });
    }
    await reply.signIn(userId);
    return reply.redirect('/dashboard', 303);
  });
};

export default passwordResetRoutes;
