import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { DomainError, ErrorKind } from '../../errors.ts';
import { REVIEW_COUNT_LIMIT } from '../../meters/review.ts';
import { API_STATUS, httpStatus } from './error-envelope.ts';

declare module 'fastify' {
  interface FastifyReply {
    /**
     * Renders src/views/<template>.eta inside the layout, with what every page needs. `section`
     * (the highlighted navigation link) defaults to the template's name.
     */
    page(template: string, data?: Record<string, unknown>): FastifyReply;
  }
}

/** What templates use to show values; dates are shown in UTC, like the usage counts. */
export const format = {
  dateTime(date: Date | null | undefined): string {
    return date ? `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC` : '—';
  },
  number(value: number): string {
    return value.toLocaleString('en-GB');
  },
  /** The review queue's count, which stops at REVIEW_COUNT_LIMIT. */
  reviewWaiting(count: number): string {
    return count >= REVIEW_COUNT_LIMIT ? `${format.number(REVIEW_COUNT_LIMIT)}+` : format.number(count);
  },
};

export default fp(async (app) => {
  const signupOpen = app.deps.config.signup === 'open';
  app.decorateReply('page', function (this: FastifyReply, template: string, data: Record<string, unknown> = {}) {
    const request = this.request;
    this.header('cache-control', 'no-store');
    return this.view(template, {
      user: request.user,
      csrfToken: request.csrfToken(this),
      signupOpen,
      format,
      error: null,
      section: template,
      ...data,
    });
  });
});

/**
 * A dashboard page's address for a link sent out: PUBLIC_URL, which SMTP_URL requires, so a mailed link
 * never follows a request's Host; without mail (a link shown to the signed-in person, to pass on), the
 * host their request came to.
 */
export function dashboardUrl(request: FastifyRequest, path: string): URL {
  return new URL(path, request.server.deps.config.publicUrl ?? `${request.protocol}://${request.host}`);
}

/** The services' messages start in lower case (they also go to the CLI); a form shows them as sentences. */
export function sentence(message: string): string {
  return message.charAt(0).toUpperCase() + message.slice(1);
}

/**
 * Pages refuse bad input with 400 and a forged form or a full account with 403; otherwise they answer as the API does.
 */
const PAGE_STATUS: Record<ErrorKind, number> = { ...API_STATUS, invalid: 400, refused: 403 };

export function pageStatus(error: DomainError): number {
  return httpStatus(error, PAGE_STATUS);
}
