import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { confirmAsUser, correctAsUser } from '../../dashboard/readings.ts';
import { nextForReview, reviewCursor, reviewPath } from '../../dashboard/review-queue.ts';
import { signedInUser } from '../../plugins/app/session.ts';
import { ReviewConfirmationForm, ReviewCorrectionForm } from '../../schemas/dashboard-forms.ts';

type ItemParams = { Params: { referenceId: string } };

/**
 * /dashboard/review: the review queue, one submission at a time (src/dashboard/review-queue.ts). Each
 * action answers with the queue's next item: a confirmation or a correction takes the item out of the
 * queue, so the pass's cursor stays; a skip moves the cursor past the item.
 */
const reviewRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app.deps;

  app.get<{ Querystring: { after?: string } }>('/review', async (request, reply) => {
    const after = reviewCursor(request.query.after);
    const user = signedInUser(request);
    const item = await nextForReview(db, user.accountId, after);
    return reply.page('review', {
      title: 'Review',
      item,
      after,
      waiting: user.reviewWaiting,
      skip: item && reviewPath(item.referenceId),
    });
  });

  app.post<ItemParams & { Body: ReviewConfirmationForm }>(
    '/review/:referenceId/confirmation',
    { schema: { body: ReviewConfirmationForm } },
    async (request, reply) => {
      const after = reviewCursor(request.body.after);
      await confirmAsUser(app.deps, signedInUser(request), request.params.referenceId);
      return reply.redirect(reviewPath(after), 303);
    },
  );

  app.post<ItemParams & { Body: ReviewCorrectionForm }>(
    '/review/:referenceId/correction',
    { schema: { body: ReviewCorrectionForm } },
    async (request, reply) => {
      const after = reviewCursor(request.body.after);
      await correctAsUser(app.deps, signedInUser(request), request.params.referenceId, request.body.reading);
      return reply.redirect(reviewPath(after), 303);
    },
  );
};

export default reviewRoutes;
