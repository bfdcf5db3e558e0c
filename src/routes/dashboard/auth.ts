import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MIN_PASSWORD_LENGTH } from '../../accounts/passwords.ts';
import { listPlans } from '../../accounts/plans.ts';
import { verifyLogin } from '../../accounts/sign-in.ts';
import { signUp } from '../../accounts/sign-up.ts';
import { isDomainError } from '../../errors.ts';
import type { Mailer } from '../../mail.ts';
import { httpStatus } from '../../plugins/app/error-envelope.ts';
import { pageStatus, sentence } from '../../plugins/app/page.ts';
import { LoginForm, SignupForm } from '../../schemas/dashboard-forms.ts';
import { mailVerificationLink } from './verify-email.ts';

/**
 * Sign-up, sign-in and sign-out: with the email verification link (verify-email.ts), the only
 * dashboard pages open without a session. With a mailer, sign-up mails that link and the new
 * account's trial waits for it.
 */
const authRoutes: FastifyPluginAsyncTypebox<{ mailer: Mailer | undefined }> = async (app, { mailer }) => {
  const { db, config } = app.deps;

  app.get('/login', async (request, reply) => {
    if (request.user) return reply.redirect('/dashboard', 303);
    return reply.page('login', { title: 'Sign in', email: '' });
  });

  app.post('/login', { schema: { body: LoginForm } }, async (request, reply) => {
    const { email, password } = request.body;
    let userId: string | undefined;
    try {
      userId = await verifyLogin(db, { email, password, ip: request.ip });
    } catch (error) {
      if (!isDomainError(error, 'refused')) throw error;
      return reply.code(httpStatus(error)).page('login', { title: 'Sign in', email, error: error.message });
    }
    if (!userId)
      return reply.code(401).page('login', { title: 'Sign in', email, error: 'The email or the password is wrong.' });
    await reply.signIn(userId);
    return reply.redirect('/dashboard', 303);
  });

  app.post('/logout', async (_request, reply) => {
    await reply.signOut();
    return reply.redirect('/dashboard/login', 303);
  });

  if (config.signup === 'closed') return;
  // A typo in DEFAULT_PLAN would otherwise surface only when the first client tries to sign up.
  const plans = await listPlans(db);
  if (!plans.some((plan) => plan.code === config.defaultPlan)) {
    throw new Error(
      `DEFAULT_PLAN "${config.defaultPlan}" is not a plan (${plans.map((plan) => plan.code).join(', ')}); create it or set SIGNUP=closed`,
    );
  }

  const signupPage = { title: 'Sign up', minPasswordLength: MIN_PASSWORD_LENGTH, verifiesEmail: mailer !== undefined };

  app.get('/signup', async (request, reply) => {
    if (request.user) return reply.redirect('/dashboard', 303);
    return reply.page('signup', { ...signupPage, email: '', organisation: '' });
  });

  app.post('/signup', { schema: { body: SignupForm } }, async (request, reply) => {
    const { email, organisation, password } = request.body;
    let userId: string;
    try {
      ({ userId } = await signUp(db, {
        accountName: organisation,
        email,
        password,
        planCode: config.defaultPlan,
        awaitVerification: mailer !== undefined,
        ip: request.ip,
      }));
    } catch (error) {
      if (!isDomainError(error, 'invalid') && !isDomainError(error, 'refused')) throw error;
      return reply
        .code(pageStatus(error))
        .page('signup', { ...signupPage, email, organisation, error: sentence(error.message) });
    }
    await reply.signIn(userId);
    if (mailer) {
      // The account exists either way; the dashboard offers to send the link again.
      await mailVerificationLink(request, mailer, userId).catch((error) =>
        request.log.error({ err: error }, 'the verification mail was not sent'),
      );
    }
    return reply.redirect('/dashboard/keys', 303);
  });
};

export default authRoutes;
