import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, signWebhook, webhookHeaders } from '../../src/webhooks/signature.ts';

t.test('a receiver using the standardwebhooks package verifies our signature', async (t) => {
  const secret = newWebhookSecret();
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'whsec_ and 32 random bytes in base64');
  const body = JSON.stringify({ event: 'reading.completed', data: { reading: '004217.35', note: 'ünïcode' } });
  const headers = webhookHeaders(secret, 'msg_1', Math.floor(Date.now() / 1000), body);

  t.same(new Webhook(secret).verify(body, headers), JSON.parse(body));
  t.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
  t.throws(() => new Webhook(secret).verify(body.replace('004217', '004218'), headers), 'a changed body fails');
  t.throws(() => new Webhook(newWebhookSecret()).verify(body, headers), 'another secret fails');
});

t.test('the signature matches the package’s own signing for the same id, timestamp and body', async (t) => {
  const secret = newWebhookSecret();
  const timestamp = 1_700_000_000;
  t.equal(
    signWebhook(secret, 'msg_2', timestamp, '{}'),
    new Webhook(secret).sign('msg_2', new Date(timestamp * 1000), '{}'),
  );
});
