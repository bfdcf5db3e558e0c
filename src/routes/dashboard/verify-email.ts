import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { sendVerificationMail, VERIFICATION_LINK_HOURS, verifyEmail } from '../../accounts/email-verification.ts';
import { DomainError } from '../../errors.ts';
import type { Mailer } from '../../mail.ts';
import { dashboardUrl } from '../../plugins/app/page.ts';
import { requireUser } from '../../plugins/app/session.ts';
import { LinkQuery } from '../../schemas/dashboard-forms.ts';

/**
 * The link mailed at sign-up (open: it may be followed in a browser that is not signed in) and
 * "send it again" for a signed-in user whose trial waits for it.
 */
const verifyEmailRoutes: FastifyPluginAsyncTypebox<{ mailer: Mailer | undefined }> = async (app, { mailer }) => {
  app.get('/verify-email', { schema: { querystring: LinkQuery } }, async (request, reply) => {
    const { trialStarted } = await verifyEmail(app.deps, request.query.token);
    return reply.page('email-verification', {
      title: 'Email verified',
      message: trialStarted
        ? 'Your email address is verified and your trial has started: create an API key to use the API.'
        : 'Your email address is verified.',
    });
  });

  app.post('/verify-email/resend', { onRequest: requireUser }, async (request, reply) => {
    if (!request.user?.awaitingVerification) return reply.redirect('/dashboard', 303);
    if (!mailer)
      throw new DomainError(
        'unavailable',
        'mail',
        'This service sends no mail at the moment. Ask its operator to start your subscription.',
      );
    await mailVerificationLink(request, mailer, request.user.userId);
    return reply.page('email-verification', {
      title: 'Check your mail',
      message: `We sent a new link to ${request.user.email}. It works once, within ${VERIFICATION_LINK_HOURS} hours.`,
    });
  });
};

export async function mailVerificationLink(request: FastifyRequest, mailer: Mailer, userId: string): Promise<void> {
  await sendVerificationMail(
    { db: request.server.deps.db, mailer },
    { userId, verifyUrl: dashboardUrl(request, '/dashboard/verify-email') },
  );
}

export default verifyEmailRoutes;
