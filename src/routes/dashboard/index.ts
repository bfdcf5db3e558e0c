import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { DomainError } from '../../errors.ts';
import { createMailer } from '../../mail.ts';
import csrf from '../../plugins/app/csrf.ts';
import { answeredDatabaseOutage } from '../../plugins/app/error-envelope.ts';
import page, { pageStatus } from '../../plugins/app/page.ts';
import { pageSecurityHeaders } from '../../plugins/app/security-headers.ts';
import session, { requireUser } from '../../plugins/app/session.ts';
import cookie from '../../plugins/external/cookie.ts';
import formbody from '../../plugins/external/formbody.ts';
import staticAssets from '../../plugins/external/static.ts';
import view from '../../plugins/external/view.ts';
import authRoutes from './auth.ts';
import invitationRoutes from './invitations.ts';
import keyRoutes from './keys.ts';
import meterRoutes from './meters.ts';
import passwordResetRoutes from './password-reset.ts';
import readingRoutes from './readings.ts';
import reviewRoutes from './review.ts';
import teamRoutes from './team.ts';
import usageRoutes from './usage.ts';
import verifyEmailRoutes from './verify-email.ts';
import webhookRoutes from './webhooks.ts';

/**
 * The dashboard, registered under /dashboard. Its cookies, form parsing, sessions, CSRF checks
 * and HTML error pages stay inside this context: the API under /api is untouched by them.
 */
export default async function dashboard(app: FastifyInstance): Promise<void> {
  await app.register(cookie);
  await app.register(formbody);
  await app.register(view);
  await app.register(staticAssets);
  await app.register(pageSecurityHeaders);
  await app.register(session);
  await app.register(csrf);
  await app.register(page);

  app.setNotFoundHandler((_request, reply) =>
    errorPage(reply, 404, 'There is nothing here, or it belongs to another account.'),
  );
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (answeredDatabaseOutage(error, request, reply)) {
      return reply.page('error', {
        title: 'Temporarily unavailable',
        message: 'The service cannot reach its database right now. Try again in a few moments.',
      });
    }
    const status = errorStatus(error);
    if (status === 500) {
      request.log.error({ err: error }, 'unexpected error');
      return errorPage(
        reply,
        500,
        `Something went wrong on our side. Quote this reference if it happens again: ${request.id}`,
      );
    }
    // A refusal's own headers (a 429's Retry-After) go out with the page.
    if (error instanceof DomainError) reply.headers(error.headers);
    return errorPage(reply, status, error.validation ? invalidFormMessage(error) : error.message);
  });

  const mailer = createMailer(app.deps.config.smtp);
  await app.register(authRoutes, { mailer });
  await app.register(verifyEmailRoutes, { mailer });
  await app.register(passwordResetRoutes, { mailer });
  await app.register(invitationRoutes);
  await app.register(async (signedIn) => {
    signedIn.addHook('onRequest', requireUser);
    signedIn.get('/', async (_request, reply) => reply.redirect('/dashboard/usage', 303));
    await signedIn.register(keyRoutes);
    await signedIn.register(webhookRoutes);
    await signedIn.register(usageRoutes);
    await signedIn.register(readingRoutes);
    await signedIn.register(reviewRoutes);
    await signedIn.register(meterRoutes);
    await signedIn.register(teamRoutes, { mailer });
  });
}

function errorStatus(error: FastifyError | DomainError): number {
  if (error instanceof DomainError) return pageStatus(error);
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) return error.statusCode;
  return 500;
}

/** A form body its schema refuses (src/schemas/dashboard-forms.ts): only a hand-made request sends one. */
function invalidFormMessage(error: FastifyError): string {
  const field = error.validation?.[0]?.instancePath.split('/')[1];
  return `${field ? `The form's ${field} field is` : 'The form is'} not what this page sends. Go back, reload the page and try again.`;
}

const ERROR_TITLES: Record<number, string> = {
  400: 'That did not work',
  403: 'Not allowed',
  404: 'Not found',
  410: 'Link no longer valid',
  429: 'Too many requests',
  500: 'Server error',
  503: 'Temporarily unavailable',
};

function errorPage(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).page('error', { title: ERROR_TITLES[status] ?? 'Error', message });
}
