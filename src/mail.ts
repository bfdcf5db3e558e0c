import nodemailer from 'nodemailer';
import type { SmtpConfig } from './config.ts';
import { DomainError } from './errors.ts';

/** A plain-text mail to one address. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends mail through SMTP_URL as MAIL_FROM; a mail that cannot be handed over is `unavailable`. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
}

/**
 * A mail is sent while a request waits, so a silent server must not hold it for nodemailer's
 * default minutes.
 */
const SMTP_TIMEOUT_MS = 10_000;

/** undefined when SMTP_URL is unset: the service then sends no mail. */
export function createMailer(smtp: SmtpConfig | undefined): Mailer | undefined {
  if (!smtp) return undefined;
  const transport = nodemailer.createTransport({
    url: smtp.url,
    connectionTimeout: SMTP_TIMEOUT_MS,
    greetingTimeout: SMTP_TIMEOUT_MS,
    socketTimeout: SMTP_TIMEOUT_MS,
  });
  return {
    async send(mail) {
      try {
        await transport.sendMail({ from: smtp.from, to: mail.to, subject: mail.subject, text: mail.text });
      } catch (error) {
        throw new DomainError(
          'unavailable',
          'mail',
          'The mail could not be sent just now. Try again in a few minutes.',
          { cause: error },
        );
      }
    },
  };
}
