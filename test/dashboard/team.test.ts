import { sql } from 'kysely';
import t from 'tap';
import { createApiKey } from '../../src/accounts/api-keys.ts';
import { MAX_INVITATIONS_PER_DAY } from '../../src/accounts/team.ts';
import { DashboardClient } from '../helpers/dashboard.ts';
import { startTestService } from '../helpers/service.ts';
import { startSmtpServer, type ReceivedMail } from '../helpers/smtp.ts';

const PASSWORD = 'correct horse battery';
let emailCount = 0;
const newEmail = () => `team${++emailCount}.${process.pid}@example.com`;

const INVITATION_LINK = /(https?:\/\/\S+\/dashboard\/invitation\?token=[A-Za-z0-9_-]+)/;
const VERIFICATION_LINK = /(https?:\/\/\S+\/dashboard\/verify-email\?token=[A-Za-z0-9_-]+)/;
const SHOWN_LINK = /<code id="secret-value" class="secret">([^<]+)<\/code>/;

function linkIn(text: string, pattern: RegExp): string {
  const link = pattern.exec(text)?.[1];
  if (!link) throw new Error(`no link in: ${text}`);
  return link.replaceAll('&amp;', '&');
}

const pathOf = (link: string) => {
  const url = new URL(link);
  return url.pathname + url.search;
};

t.test('team: an owner invites colleagues by email, sees and removes them', async (t) => {
  const smtp = await startSmtpServer();
  t.teardown(() => smtp.close());
  const service = await startTestService(t, {
    worker: false,
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Meterlens <noreply@meters.example.com>' },
  });

  /** A signed-up owner whose email is verified (`verified: false`: still waiting for the trial). */
  async function owner({
    verified = true,
  } = {}): Promise<{ client: DashboardClient; email: string; accountId: string }> {
    const client = new DashboardClient(service.url);
    const email = newEmail();
    const before = smtp.received.length;
    const response = await client.signUp(email, PASSWORD, 'Acme Water');
    if (response.status !== 303) throw new Error(`sign-up answered ${response.status}`);
    const mail = (await smtp.waitFor(before + 1)).slice(before).find((received) => received.to[0] === email)!;
    if (verified) await client.get(pathOf(linkIn(mail.text, VERIFICATION_LINK)));
    const { account_id: accountId } = await service.db
      .selectFrom('users')
      .select('account_id')
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    await client.get('/dashboard/team');
    return { client, email, accountId };
  }

  /** Invites `email` from the owner's team page; returns the link shown and the mail the SMTP server got. */
  async function invite(client: DashboardClient, email: string): Promise<{ shown: string; mail: ReceivedMail }> {
    const before = smtp.received.length;
    const page = await client.post('/dashboard/team/invitations', { email });
    if (page.status !== 200) throw new Error(`invite answered ${page.status}: ${page.text}`);
    const mails = await smtp.waitFor(before + 1);
    return { shown: linkIn(page.text, SHOWN_LINK), mail: mails.slice(before).find((mail) => mail.to[0] === email)! };
  }

  t.test('an account still waiting for its email to be verified invites no one', async (t) => {
    const { client } = await owner({ verified: false });
    const refused = await client.post('/dashboard/team/invitations', { email: newEmail() });
    t.equal(refused.status, 403);
    t.match(refused.text, 'Verify your email address first');
    t.same(await service.db.selectFrom('invitations').select('id').execute(), [], 'no invitation, no mail');
  });

  t.test('the invitation is mailed and shown once; its link makes a member, once', async (t) => {
    const { client, email: ownerEmail } = await owner();
    const colleague = newEmail();
    const { shown, mail } = await invite(client, colleague);
    t.equal(mail.subject, 'You are invited to Acme Water on Meterlens');
    const mailed = linkIn(mail.text, INVITATION_LINK);
    t.equal(mailed, shown, 'the page shows the link it mailed');
    const team = await client.get('/dashboard/team');
    t.notMatch(team.text, shown, 'the link is not shown again');
    t.match(team.text, colleague, 'the invitation is listed as pending');

    const browser = new DashboardClient(service.url);
    const form = await browser.get(pathOf(mailed));
    t.equal(form.status, 200);
    t.match(
      form.text,
      `You are invited to Acme Water on Meterlens. Choose a password: you will sign in as ${colleague}.`,
    );
    const mismatch = await browser.post('/dashboard/invitation', {
      token: new URL(mailed).searchParams.get('token')!,
      password: PASSWORD,
      password_confirmation: 'something else',
    });
    t.equal(mismatch.status, 400);
    t.match(mismatch.text, 'The two passwords are not the same');
    const short = await browser.post('/dashboard/invitation', {
      token: new URL(mailed).searchParams.get('token')!,
      password: 'short',
      password_confirmation: 'short',
    });
    t.equal(short.status, 400);
    t.match(short.text, 'The password must have at least 10 characters', 'the rules of sign-up');
    const joined = await browser.post('/dashboard/invitation', {
      token: new URL(mailed).searchParams.get('token')!,
      password: PASSWORD,
      password_confirmation: PASSWORD,
    });
    t.equal(joined.status, 303);
    t.equal(joined.location, '/dashboard');
    const member = await browser.get('/dashboard/team');
    t.match(member.text, `${colleague} (you)`, 'signed in as the new member');
    t.match(member.text, ownerEmail, 'who sees the team');
    t.match(member.text, 'Only an owner of the account can invite or remove people.');
    t.notMatch(member.text, 'action="/dashboard/team/invitations"', 'and no invite form');

    const again = await new DashboardClient(service.url).get(pathOf(mailed));
    t.equal(again.status, 410, 'the link works once');
    t.match(again.text, 'This invitation has already been accepted or was withdrawn.');
    t.equal(
      (await new DashboardClient(service.url).signIn(colleague, PASSWORD)).status,
      303,
      'the member signs in with the chosen password',
    );
  });

  t.test('a member may not invite or remove people', async (t) => {
    const { client, accountId } = await owner();
    const colleague = newEmail();
    const { shown } = await invite(client, colleague);
    const member = new DashboardClient(service.url);
    await member.get(pathOf(shown));
    await member.post('/dashboard/invitation', {
      token: new URL(shown).searchParams.get('token')!,
      password: PASSWORD,
      password_confirmation: PASSWORD,
    });
    await member.get('/dashboard/team');
    const refused = await member.post('/dashboard/team/invitations', { email: newEmail() });
    t.equal(refused.status, 403);
    t.match(refused.text, 'Only an owner of the account can invite or remove people.');
    const ownerRow = await service.db
      .selectFrom('users')
      .select('id')
      .where('account_id', '=', accountId)
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow();
    t.equal((await member.post(`/dashboard/team/users/${ownerRow.id}/delete`)).status, 403);
    t.ok(
      await service.db.selectFrom('users').select('id').where('id', '=', ownerRow.id).executeTakeFirst(),
      'the owner stays',
    );
  });

  t.test('removing a colleague signs them out at once; the keys they made stay', async (t) => {
    const { client, accountId } = await owner();
    const colleague = newEmail();
    const { shown } = await invite(client, colleague);
    const member = new DashboardClient(service.url);
    await member.get(pathOf(shown));
    await member.post('/dashboard/invitation', {
      token: new URL(shown).searchParams.get('token')!,
      password: PASSWORD,
      password_confirmation: PASSWORD,
    });
    t.equal((await member.get('/dashboard/keys')).status, 200);
    const { id: keyId } = await createApiKey(service.db, { accountId, projectName: 'made by the colleague' });
    const { id: userId } = await service.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', colleague)
      .executeTakeFirstOrThrow();

    await client.get('/dashboard/team');
    const removed = await client.post(`/dashboard/team/users/${userId}/delete`);
    t.equal(removed.status, 303);
    t.notMatch((await client.get('/dashboard/team')).text, colleague, 'no longer listed');
    t.equal((await member.get('/dashboard/keys')).location, '/dashboard/login', "the colleague's session has ended");
    t.equal(
      (await new DashboardClient(service.url).signIn(colleague, PASSWORD)).status,
      401,
      'and they cannot sign in',
    );
    t.ok(
      await service.db
        .selectFrom('api_keys')
        .select('id')
        .where('id', '=', keyId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst(),
      'the key stays',
    );

    const self = await service.db
      .selectFrom('users')
      .select('id')
      .where('account_id', '=', accountId)
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow();
    const selfRemoval = await client.post(`/dashboard/team/users/${self.id}/delete`);
    t.equal(selfRemoval.status, 400);
    t.match(selfRemoval.text, 'You cannot remove yourself.');
    const other = await owner();
    const { id: otherUser } = await service.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', other.email)
      .executeTakeFirstOrThrow();
    t.equal(
      (await client.post(`/dashboard/team/users/${otherUser}/delete`)).status,
      404,
      "another account's user is not found",
    );
    t.equal((await client.post('/dashboard/team/users/abc/delete')).status, 404);
  });

  t.test(
    'an email that already has a user is refused; inviting again withdraws the earlier link; withdrawn and expired links are refused',
    async (t) => {
      const { client, email: ownerEmail } = await owner();
      const same = await client.post('/dashboard/team/invitations', { email: ownerEmail.toUpperCase() });
      t.equal(same.status, 400);
      t.match(same.text, 'is already on your team');
      const other = await owner();
      const elsewhere = await client.post('/dashboard/team/invitations', { email: other.email });
      t.equal(elsewhere.status, 400);
      t.match(
        elsewhere.text,
        'already signs in to another Meterlens account; a person belongs to one account, so invite another address',
      );
      t.match(
        (await client.post('/dashboard/team/invitations', { email: 'not an email' })).text,
        'is not an email address',
      );

      const colleague = newEmail();
      const first = await invite(client, colleague);
      const second = await invite(client, colleague);
      t.equal(
        (await new DashboardClient(service.url).get(pathOf(first.shown))).status,
        410,
        'the earlier link is withdrawn',
      );
      t.equal((await new DashboardClient(service.url).get(pathOf(second.shown))).status, 200);

      const { id } = await service.db
        .selectFrom('invitations')
        .select('id')
        .where('email', '=', colleague)
        .where('used_at', 'is', null)
        .executeTakeFirstOrThrow();
      await client.get('/dashboard/team');
      t.equal((await client.post(`/dashboard/team/invitations/${id}/delete`)).status, 303);
      t.notMatch((await client.get('/dashboard/team')).text, colleague, 'a withdrawn invitation is no longer listed');
      const withdrawn = await new DashboardClient(service.url).get(pathOf(second.shown));
      t.equal(withdrawn.status, 410);
      t.match(withdrawn.text, 'This invitation has already been accepted or was withdrawn.');

      const late = await invite(client, newEmail());
      await sql`UPDATE invitations SET expires_at = now() - interval '1 second' WHERE token_sha256 = encode(sha256(convert_to(${new URL(late.shown).searchParams.get('token')}, 'UTF8')), 'hex')`.execute(
        service.db,
      );
      const expired = await new DashboardClient(service.url).get(pathOf(late.shown));
      t.equal(expired.status, 410);
      t.match(expired.text, 'This invitation has expired (invitations work for 7 days). Ask for a new one.');
      const invalid = await new DashboardClient(service.url).get('/dashboard/invitation?token=nothing');
      t.equal(invalid.status, 400);
      t.match(invalid.text, 'This invitation link is not valid.');
    },
  );

  t.test(`an account sends at most ${MAX_INVITATIONS_PER_DAY} invitations a day`, async (t) => {
    const { client, accountId } = await owner();
    await service.db
      .insertInto('invitations')
      .values(
        Array.from({ length: MAX_INVITATIONS_PER_DAY }, (_, index) => ({
          account_id: accountId,
          email: `bulk${index}@example.com`,
          token_sha256: `${index}`.padStart(64, 'a'),
          expires_at: new Date(Date.now() + 86_400_000),
        })),
      )
      .execute();
    const refused = await client.post('/dashboard/team/invitations', { email: newEmail() });
    t.equal(refused.status, 429);
    t.match(refused.text, `This account has sent ${MAX_INVITATIONS_PER_DAY} invitations in the last day`);
  });
});

t.test('without SMTP_URL the invitation link is shown to pass on, and nothing is mailed', async (t) => {
  const service = await startTestService(t, { worker: false });
  const client = new DashboardClient(service.url);
  await client.signUp(newEmail(), PASSWORD);
  await client.get('/dashboard/team');
  const page = await client.post('/dashboard/team/invitations', { email: newEmail() });
  t.equal(page.status, 200);
  t.match(page.text, 'This service sends no mail: pass this link on yourself.');
  t.match(linkIn(page.text, SHOWN_LINK), `${service.url}/dashboard/invitation?token=`);
});
