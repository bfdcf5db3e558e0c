import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

/** Where drawn ports start: above the well-known and most registered services' ports. */
const LOWEST = 10_000;

/**
 * A port nothing listens on right now, for a server that binds it next, maybe seconds later (a child process that
 * starts its PostgreSQL first). It is drawn below the kernel's ephemeral range, where listen(0) and outgoing
 * connections take their ports: one from that range can be handed to another test's socket before the server binds
 * it (seen: `npm start` failing with EADDRINUSE while the suite ran in parallel).
 */
export async function freePort(): Promise<number> {
  const ephemeralFrom = await ephemeralRangeStart();
  for (let tries = 0; tries < 100; tries++) {
    const port = LOWEST + Math.floor(Math.random() * (ephemeralFrom - LOWEST));
    if (await isFree(port)) return port;
  }
  throw new Error(`no free port between ${LOWEST} and ${ephemeralFrom}`);
}

/** The first port of the kernel's ephemeral range (Linux's ip_local_port_range; IANA's 49152 elsewhere). */
async function ephemeralRangeStart(): Promise<number> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '49152');
  return Number(range.trim().split(/\s+/)[0]);
}

/** Whether a server could listen on `port` on every IPv4 address now (the service's own HOST, 0.0.0.0, included). */
function isFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}
