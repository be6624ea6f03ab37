// The schema of a database as pg_dump writes it, without a pg_dump binary: the WebAssembly build of
// pg_dump 18 from @electric-sql/pglite-tools (made to dump in-process PGlite databases), connected
// to the real server through db/schema/wire.ts. pg_dump's WebAssembly code reads and writes
// protocol bytes through synchronous callbacks, so each exchange blocks this thread (Atomics.wait)
// while the worker thread of wire.ts does the network I/O.
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';

export interface WireReply {
  bytes?: Uint8Array;
  error?: string;
}

/** pg_dump run with `args` against the database at `url` (any role and authentication it names). */
export async function pgDump(url: string, args: string[]): Promise<string> {
  const { pgDump: pgliteDump } = await import('@electric-sql/pglite-tools/pg_dump');
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const { port1: replies, port2 } = new MessageChannel();
  const worker = new Worker(new URL('./wire.ts', import.meta.url), { workerData: { url, signal, replies: port2 }, transferList: [port2] });
  worker.unref();

  function exchange(bytes: Uint8Array): Uint8Array {
    Atomics.store(signal, 0, 0);
    worker.postMessage(bytes.slice());
    let reply: { message: WireReply } | undefined;
    while (!(reply = receiveMessageOnPort(replies))) Atomics.wait(signal, 0, 0, 50);
    if (reply.message.error !== undefined) throw new Error(`schema dump: ${reply.message.error}`);
    return reply.message.bytes ?? new Uint8Array();
  }

  // The PGlite surface pgDump uses: the search path it restores afterwards, and the byte exchange.
  const server = {
    query: async () => ({ rows: [{ search_path: 'public' }] }),
    exec: async () => {},
    execProtocolRawStream(bytes: Uint8Array, { onRawData }: { onRawData: (bytes: Uint8Array) => void }) {
      const answer = exchange(bytes);
      if (answer.length > 0) onRawData(answer);
    },
  };
  try {
    const file = await pgliteDump({ pg: server as never, args });
    return await file.text();
  } finally {
    await worker.terminate();
  }
}
