import t from 'tap';
import { DomainError } from '../src/errors.ts';
import { createMailer } from '../src/mail.ts';
import { freePort } from './helpers/ports.ts';
import { startSmtpServer } from './helpers/smtp.ts';

t.test('no SMTP settings, no mailer', async (t) => {
  t.equal(createMailer(undefined), undefined);
});

t.test('sends a plain-text mail to one address through a real SMTP server, signing in with the URL', async (t) => {
  const smtp = await startSmtpServer();
  t.teardown(() => smtp.close());
  const mailer = createMailer({ url: smtp.url, from: 'Meterlens <noreply@example.com>' })!;
  await mailer.send({
    to: 'ops@example.com',
    subject: 'Hello',
    text: 'One line.\nAnother with = and a long enough line to be wrapped by the quoted-printable encoding of the mail.',
  });
  const [mail] = await smtp.waitFor(1);
  t.equal(mail.from, 'noreply@example.com');
  t.same(mail.to, ['ops@example.com']);
  t.equal(mail.subject, 'Hello');
  t.match(
    mail.text,
    'One line.\r\nAnother with = and a long enough line to be wrapped by the quoted-printable encoding of the mail.',
  );
});

t.test('a mail the server does not take is `unavailable`, with the cause kept', async (t) => {
  const smtp = await startSmtpServer();
  t.teardown(() => smtp.close());
  const wrongPassword = smtp.url.replace(/:[^:@]+@/, ':wrong@');
  const refusedPort = `smtp://127.0.0.1:${await freePort()}`;
  for (const url of [wrongPassword, refusedPort]) {
    const error = await createMailer({ url, from: 'noreply@example.com' })!
      .send({ to: 'ops@example.com', subject: 'Hello', text: 'Hi' })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    t.type(error, DomainError, url);
    t.match(error, {
      kind: 'unavailable',
      field: 'mail',
      message: 'The mail could not be sent just now. Try again in a few minutes.',
    });
    t.ok((error as Error).cause, 'the SMTP error is its cause, for the log');
  }
  t.equal(smtp.received.length, 0);
});
