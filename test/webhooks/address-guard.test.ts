import t from 'tap';
import { networkInterfaces } from 'node:os';
import { request } from 'undici';
import { assertPublicUrl, isPrivateAddress, publicOnlyAgent } from '../../src/webhooks/address-guard.ts';

/** Every special-purpose range of the IANA IPv4 and IPv6 registries, embedded IPv4 forms, and public addresses. */
const ADDRESSES: Array<[address: string, refused: boolean, why: string]> = [
  ['0.0.0.0', true, 'unspecified'],
  ['0.1.2.3', true, '"this network"'],
  ['10.1.2.3', true, 'private'],
  ['100.64.0.1', true, 'shared (CGNAT)'],
  ['100.127.255.254', true, 'shared (CGNAT), last'],
  ['127.0.0.1', true, 'loopback'],
  ['127.8.9.10', true, 'loopback'],
  ['169.254.169.254', true, 'link-local (cloud metadata)'],
  ['172.16.0.1', true, 'private'],
  ['172.31.255.255', true, 'private'],
  ['192.0.0.8', true, 'IETF protocol assignments'],
  ['192.0.0.170', true, 'NAT64 discovery'],
  ['192.0.2.2', true, 'TEST-NET-1'],
  ['192.31.196.1', true, 'AS112-v4'],
  ['192.52.193.1', true, 'AMT'],
  ['192.88.99.1', true, 'deprecated 6to4 relay anycast'],
  ['192.168.1.1', true, 'private'],
  ['192.175.48.1', true, 'AS112 direct delegation'],
  ['198.18.0.1', true, 'benchmarking'],
  ['198.19.255.255', true, 'benchmarking'],
  ['198.51.100.7', true, 'TEST-NET-2'],
  ['203.0.113.9', true, 'TEST-NET-3'],
  ['224.0.0.1', true, 'multicast'],
  ['240.0.0.1', true, 'reserved'],
  ['255.255.255.255', true, 'limited broadcast'],
  ['::', true, 'unspecified'],
  ['::1', true, 'loopback'],
  ['::127.0.0.1', true, 'IPv4-compatible loopback'],
  ['::8.8.8.8', true, 'IPv4-compatible (deprecated form)'],
  ['::ffff:127.0.0.1', true, 'IPv4-mapped loopback'],
  ['::ffff:a00:1', true, 'IPv4-mapped private'],
  ['::ffff:169.254.169.254', true, 'IPv4-mapped link-local'],
  ['::ffff:0:7f00:1', true, 'IPv4-translated (RFC 6145)'],
  ['64:ff9b::7f00:1', true, 'NAT64 of loopback'],
  ['64:ff9b::a00:1', true, 'NAT64 of private'],
  ['64:ff9b:1::808:808', true, 'NAT64 local-use'],
  ['100::1', true, 'discard-only'],
  ['2001::1', true, 'Teredo'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', true, 'Teredo'],
  ['2001:2::1', true, 'benchmarking'],
  ['2001:10::1', true, 'ORCHID'],
  ['2001:20::1', true, 'ORCHIDv2'],
  ['2001:db8::1', true, 'documentation'],
  ['2002:7f00:1::1', true, '6to4 of loopback'],
  ['2002:808:808::1', true, '6to4 (deprecated)'],
  ['2620:4f:8000::1', true, 'AS112-v6'],
  ['3fff::1', true, 'documentation (RFC 9637)'],
  ['5f00::1', true, 'SRv6 SIDs'],
  ['fc00::1', true, 'unique local'],
  ['fd12:3456::1', true, 'unique local'],
  ['fe80::1', true, 'link-local'],
  ['fec0::1', true, 'deprecated site-local'],
  ['ff02::1', true, 'multicast'],
  ['8.8.8.8', false, 'public'],
  ['1.1.1.1', false, 'public'],
  ['93.184.215.14', false, 'public'],
  ['172.32.0.1', false, 'just past 172.16/12'],
  ['100.128.0.1', false, 'just past CGNAT'],
  ['192.0.3.1', false, 'just past TEST-NET-1'],
  ['198.20.0.1', false, 'just past benchmarking'],
  ['::ffff:8.8.8.8', false, 'IPv4-mapped public'],
  ['64:ff9b::808:808', false, 'NAT64 of a public IPv4 address'],
  ['2606:4700:4700::1111', false, 'public IPv6'],
  ['2a00:1450:4001:81c::200e', false, 'public IPv6'],
  ['2001:4860:4860::8888', false, 'public IPv6 past 2001::/23'],
];

t.test('refuses every special-purpose and embedded non-public address, allows public ones', async (t) => {
  t.ok(ADDRESSES.length >= 40);
  for (const [address, refused, why] of ADDRESSES) {
    t.equal(isPrivateAddress(address), refused, `${address} (${why}) is ${refused ? 'refused' : 'allowed'}`);
  }
});

t.test("refuses this host's own interface addresses, whatever their range", async (t) => {
  for (const entry of Object.values(networkInterfaces()).flat()) {
    if (entry) t.ok(isPrivateAddress(entry.address), `${entry.address} is this host's`);
  }
  const guard = await t.mockImport<typeof import('../../src/webhooks/address-guard.ts')>(
    '../../src/webhooks/address-guard.ts',
    {
      'node:os': {
        networkInterfaces: () => ({ eth0: [{ address: '93.184.215.14', family: 'IPv4', internal: false }] }),
      },
    },
  );
  t.ok(guard.isPrivateAddress('93.184.215.14'), 'a public address of one of its interfaces');
  t.ok(guard.isPrivateAddress('::ffff:93.184.215.14'), 'and its IPv4-mapped form');
  t.notOk(guard.isPrivateAddress('8.8.8.8'));
});

t.test('assertPublicUrl refuses literal private hosts and names that resolve to them', async (t) => {
  for (const url of [
    'http://127.0.0.1/hook',
    'https://10.0.0.7/',
    'http://169.254.169.254/latest',
    'http://[::1]:8080/',
    'http://[fc00::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://2130706433/',
    'http://localhost:3000/hook',
    'http://[::127.0.0.1]/',
    'http://[64:ff9b::7f00:1]/',
    'http://[2002:7f00:1::1]/',
    'http://192.0.2.2/',
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
