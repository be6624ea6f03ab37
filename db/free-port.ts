// A port for a server about to start on this host: the embedded PostgreSQL, the restore drill's
// services, and every server the tests start.
//
// A port the kernel hands out for `listen(0)` comes from its ephemeral range, the same range every
// outgoing connection takes its local port from; between the pick and the server's own bind
// (seconds, for a process that starts a database first), one of them can take it. So the port is
// picked below that range, where only explicit binds land, and is claimed for a while in a folder
// of the host's temporary directory, so two processes picking at once never pick the same one. A
// port something already listens on is skipped.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const lowest = 10_000;
/** How long a claim holds: longer than any start between the pick and the bind. */
const claimMinutes = 10;
const claims = path.join(os.tmpdir(), 'opinion-backend-ports');

/** The first port of the kernel's ephemeral range (Linux), or the IANA one elsewhere. */
function ephemeralStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 49_152;
  }
}

/** Claims `port` for this window and the next, unless another process claimed it in either. */
function claim(port: number): boolean {
  const window = Math.floor(Date.now() / (claimMinutes * 60_000));
  const file = (w: number) => path.join(claims, `${port}.${w}`);
  if (existsSync(file(window - 1))) return false;
  try {
    // Created only if absent: of two processes claiming this window at once, one gets it.
    writeFileSync(file(window), String(process.pid), { flag: 'wx', mode: 0o666 });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return false; // claimed in this window
    mkdirSync(claims, { recursive: true });
    try {
      chmodSync(claims, 0o1777); // every user's processes claim here, each removing only its own
    } catch {
      // made a moment ago by another user's process, which set it
    }
    return claim(port);
  }
}

/** Now and then, the claims of windows that have passed. */
function sweep(): void {
  if (Math.random() > 0.02) return;
  const window = Math.floor(Date.now() / (claimMinutes * 60_000));
  for (const name of readdirSync(claims)) {
    if (Number(name.split('.')[1]) >= window - 1) continue;
    try {
      rmSync(path.join(claims, name), { force: true });
    } catch {
      // another user's claim, in a folder with the sticky bit: theirs to sweep
    }
  }
}

function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * A port below the ephemeral range that nothing listens on and no other process picked lately.
 * The search starts at a random place in that range (`random`, in [0, 1)).
 */
export async function freePort(random: () => number = Math.random): Promise<number> {
  const highest = Math.min(ephemeralStart(), 65_536) - 1;
  if (highest - lowest < 1_000) return kernelPort();
  const span = highest - lowest + 1;
  const start = Math.floor(random() * span);
  for (let i = 0; i < span; i++) {
    const port = lowest + ((start + i) % span);
    if (claim(port) && (await listenable(port))) {
      sweep();
      return port;
    }
  }
  return kernelPort();
}

/** A port from the kernel, for a host whose ephemeral range leaves no room below it. */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
