import { lookup, type LookupAddress } from 'node:dns';
import { lookup as lookupAll } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';

/** IPv6 global unicast: everything outside it (IPv4-compatible ::/96, 5f00::/16 …) is special. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
/** NAT64's well-known prefix: the address stands for the IPv4 address in its last 32 bits. */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * Whether a webhook must not reach this address unless WEBHOOK_ALLOW_PRIVATE=1: every
 * special-purpose range of the IANA IPv4 and IPv6 registries (as ipaddr.js classifies them: private,
 * loopback, link-local, CGNAT, documentation, benchmarking, 6to4, Teredo, NAT64 local-use, …),
 * multicast, and the addresses of this host's own interfaces. An IPv4 address embedded in an
 * IPv4-mapped or NAT64 well-known-prefix address is judged as that IPv4 address.
 */
export function isPrivateAddress(ip: string): boolean {
  const address = embeddedIPv4(parse(ip));
  return !isPublicUnicast(address) || isOwnAddress(address);
}

/**
 * ipaddr.js reads an IPv6 address written with a dotted IPv4 tail (`::8.8.8.8`) as IPv4-mapped;
 * the URL parser writes it in hex (`::808:808`, IPv4-compatible, as the OS would connect to it).
 */
function parse(ip: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const family = isIP(ip);
  if (family === 0) throw new Error(`Not an IP address: ${ip}`);
  if (family === 4) return ipaddr.parse(ip);
  return ipaddr.parse(new URL(`http://[${ip.split('%')[0]}]`).hostname.slice(1, -1));
}

function embeddedIPv4(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (address.kind() === 'ipv4') return address;
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
  if (v6.match(NAT64_WELL_KNOWN)) return ipaddr.fromByteArray(v6.toByteArray().slice(12));
  return v6;
}

function isPublicUnicast(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (address.range() !== 'unicast') return false;
  return address.kind() === 'ipv4' || (address as ipaddr.IPv6).match(GLOBAL_UNICAST_V6);
}

/** Read at every check: interfaces come and go, and a public address of this host is as private as loopback. */
function isOwnAddress(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  const normalised = address.toNormalizedString();
  return Object.values(networkInterfaces())
    .flat()
    .some((entry) => entry !== undefined && embeddedIPv4(parse(entry.address)).toNormalizedString() === normalised);
}

export class PrivateAddressError extends Error {
  constructor(hostname: string, address: string) {
    const target = hostname === address ? address : `${hostname} (${address})`;
    super(
      `Refused to connect to ${target}: a loopback, private or otherwise non-public address (WEBHOOK_ALLOW_PRIVATE=1 allows it)`,
    );
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
    const [first] = addresses;
    if (!first) return callback(new Error(`${hostname} has no address`), '', 0);
    callback(null, first.address, first.family);
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
