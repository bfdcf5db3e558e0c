import { createServer } from 'node:net';

/** A port nothing on 127.0.0.1 listens on right now (the kernel's choice), for a server that binds it next. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
