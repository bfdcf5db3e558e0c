import t from 'tap';
import { request } from 'undici';
import { assertPublicUrl, isPrivateAddress, publicOnlyAgent } from '../../src/webhooks/address-guard.ts';

t.test('private, loopback, link-local, unique-local, CGNAT, multicast and unspecified addresses', async (t) => {
  const refused = [
    '127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '224.0.0.1', '0.0.0.0', '255.255.255.255',
    '::1', '::', 'fc00::1', 'fd12:3456::1', 'fe80::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:a00:1', '::ffff:169.254.169.254',
  ];
  const allowed = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'];
  for (const ip of refused) t.ok(isPrivateAddress(ip), `${ip} is refused`);
  for (const ip of allowed) t.notOk(isPrivateAddress(ip), `${ip} is allowed`);
});

t.test('assertPublicUrl refuses literal private hosts and names that resolve to them', async (t) => {
  for (const url of [
    'http://127.0.0.1/hook', 'https://10.0.0.7/', 'http://169.254.169.254/latest', 'http://[::1]:8080/',
    'http://[fc00::1]/', 'http://[::ffff:127.0.0.1]/', 'http://2130706433/', 'http://localhost:3000/hook',
  ]) {
    await t.rejects(assertPublicUrl(url), /Refused to connect to .*non-public address/, url);
  }
  await t.rejects(assertPublicUrl('http://no-such-host.invalid/'), /does not resolve/);
  await t.resolves(assertPublicUrl('https://8.8.8.8/hook'));
});

t.test('publicOnlyAgent refuses to connect to a private address, literal or resolved', async (t) => {
  for (const url of ['http://127.0.0.1:9/', 'http://[::1]:9/', 'http://localhost:9/']) {
    await t.rejects(request(url, { dispatcher: publicOnlyAgent }), { name: 'PrivateAddressError' }, url);
  }
});
