import { lookup, type LookupAddress } from 'node:dns';
import { lookup as lookupAll } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';

/**
 * Addresses a webhook must not reach unless WEBHOOK_ALLOW_PRIVATE=1: the service's own host and
 * network, and what cannot be a single public host. BlockList also matches IPv4-mapped IPv6
 * addresses (::ffff:10.0.0.1) against the IPv4 ranges.
 */
const privateAddresses = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", includes the unspecified address
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes broadcast
] as const) {
  privateAddresses.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  privateAddresses.addSubnet(network, prefix, 'ipv6');
}

export function isPrivateAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 0) throw new Error(`Not an IP address: ${ip}`);
  return privateAddresses.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

export class PrivateAddressError extends Error {
  constructor(hostname: string, address: string) {
    const target = hostname === address ? address : `${hostname} (${address})`;
    super(`Refused to connect to ${target}: a loopback, private or otherwise non-public address (WEBHOOK_ALLOW_PRIVATE=1 allows it)`);
    this.name = 'PrivateAddressError';
  }
}

/**
 * For a new endpoint: the URL's host must be, or resolve only to, public addresses. Checked again
 * at delivery time, since DNS can change.
 */
export async function assertPublicUrl(url: string | URL): Promise<void> {
  const hostname = bareHostname(new URL(url));
  const addresses = isIP(hostname) ? [hostname] : await resolve(hostname);
  const refused = addresses.find(isPrivateAddress);
  if (refused) throw new PrivateAddressError(hostname, refused);
}

/**
 * An undici dispatcher that refuses to connect to a private address: literal IP hostnames are
 * checked before connecting, names when resolved, so the check applies to the address actually
 * connected to and a DNS answer cannot change between check and use.
 */
export const publicOnlyAgent = new Agent({ connect: publicOnlyConnector() });

function publicOnlyConnector(): buildConnector.connector {
  const connect = buildConnector({ lookup: lookupPublicOnly });
  return (options, callback) => {
    if (isIP(options.hostname) && isPrivateAddress(options.hostname)) {
      callback(new PrivateAddressError(options.hostname, options.hostname), null);
      return;
    }
    connect(options, callback);
  };
}

function lookupPublicOnly(...[hostname, options, callback]: Parameters<LookupFunction>): void {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '', 0);
    const refused = addresses.find((entry) => isPrivateAddress(entry.address));
    if (refused) return callback(new PrivateAddressError(hostname, refused.address), '', 0);
    if (options.all) return (callback as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
}

/** URL keeps the brackets of an IPv6 host: `[::1]`. */
function bareHostname(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

async function resolve(hostname: string): Promise<string[]> {
  try {
    return (await lookupAll(hostname, { all: true })).map((entry) => entry.address);
  } catch {
    throw new Error(`The host ${hostname} does not resolve`);
  }
}
