// Binding a port at startup: a port that is taken, forbidden or on an address this machine does
// not have is a StartupError naming the setting to change (one line, exit 1: contract 11), never an
// unhandled 'error' event.
import { createServer, type Server } from 'node:http';
import { StartupError } from '../config.ts';

export interface Binding {
  port: number;
  /** undefined: every interface. */
  host: string | undefined;
  /** The setting that chose the port (PORT, S3_PORT, METRICS_PORT), named in the message. */
  portSetting: string;
  /** The setting that chose the address, when there is one. */
  hostSetting?: string;
  /** What listens there, for the message ("the embedded S3 store"). */
  what: string;
}

export async function listen(server: Server, binding: Binding): Promise<Server> {
  const { port, host, portSetting, hostSetting, what } = binding;
  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      server.off('listening', listening);
      if (error.code === 'EADDRINUSE')
        reject(new StartupError(`port ${port} is already in use: set ${portSetting} to a free port (${what})`));
      else if (error.code === 'EACCES')
        reject(new StartupError(`port ${port} needs privileges this user lacks: set ${portSetting} to a port above 1023 (${what})`));
      else if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN') {
        reject(new StartupError(`${hostSetting ?? 'the address'} ${host} is not an address of this machine (${what})`));
      } else reject(error);
    };
    const listening = () => {
      server.off('error', failed);
      resolve();
    };
    server.once('error', failed);
    server.once('listening', listening);
    if (host === undefined) server.listen(port);
    else server.listen(port, host);
  });
  return server;
}

/** Closes a listening server, resolving once it has closed (at once if it never listened). */
export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
  });
}

/**
 * Binds each port once and lets it go again, so a taken one fails startup at once, before anything
 * (the embedded database) has started; listen() still reports one taken in between.
 */
export async function checkPorts(bindings: Binding[]): Promise<void> {
  for (const binding of bindings) await close(await listen(createServer(), binding));
}
