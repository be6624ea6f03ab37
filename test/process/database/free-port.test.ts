// Ports for servers about to start (db/free-port.ts): below the kernel's ephemeral range, where no
// outgoing connection takes one, never one something listens on, and never the same one for two
// processes picking at once, even when both search from the same place.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../helpers/process.ts';

const run = promisify(execFile);
const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

/** `count` ports picked in a separate process, every search starting at the same place. */
async function pickInProcess(count: number, from: number): Promise<number[]> {
  const script = `
    import { freePort } from './db/free-port.ts';
    const ports = [];
    for (let i = 0; i < ${count}; i++) ports.push(await freePort(() => ${from}));
    console.log(JSON.stringify(ports));`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: projectRoot });
  return JSON.parse(stdout) as number[];
}

describe('freePort', () => {
  it('gives two processes picking at once from the same place different ports, all below the ephemeral range', async () => {
    const from = Math.random() * 0.9;
    const [a, b] = await Promise.all([pickInProcess(20, from), pickInProcess(20, from)]);
    const all = [...a, ...b];
    expect(new Set(all).size).toBe(40);
    for (const port of all) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralStart);
    }
  });

  it('skips a port something listens on', async () => {
    const from = Math.random() * 0.9;
    const first = (await pickInProcess(1, from)).at(0) ?? 0;
    expect(first).toBeGreaterThanOrEqual(10_000);
    // The next search from the same place would reach the port after it: hold that one open.
    const held = net.createServer();
    // (When something else already listens there, it is held all the same.)
    await new Promise<void>((resolve) => held.once('error', () => resolve()).listen(first + 1, '127.0.0.1', resolve));
    try {
      const [next] = await pickInProcess(1, from);
      expect(next).not.toBe(first);
      expect(next).not.toBe(first + 1);
      expect(next).toBeGreaterThan(first + 1);
    } finally {
      held.close();
    }
  });
});
