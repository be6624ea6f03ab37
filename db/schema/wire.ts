// The network half of db/schema/pg-dump.ts, in a worker thread: the thread running pg_dump's
// WebAssembly code posts the bytes pg_dump writes and blocks until this thread has the answer.
//
// The first bytes pg_dump sends are its startup message. Instead of forwarding it (pg_dump would
// log in as `postgres` without a password), this thread logs in with node-postgres as the owner of
// the database URL (password, SCRAM, TLS as the URL says), takes over the raw socket, and answers
// pg_dump as a server that needs no password would: AuthenticationOk, the server's parameters, key
// data, ReadyForQuery. After that it forwards bytes both ways: each write that ends in a simple
// Query or a Sync waits for the server's ReadyForQuery; other writes expect no answer.
import type { Duplex } from 'node:stream';
import pg from 'pg';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { WireReply } from './pg-dump.ts';

interface Session {
  socket: Duplex;
  received: Buffer;
  closed: boolean;
  wake: (() => void) | undefined;
}

const { url, signal, replies } = workerData as { url: string; signal: Int32Array; replies: MessagePort };
let session: Session | undefined;

function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

function cString(...values: string[]): Buffer {
  return Buffer.concat(values.map((value) => Buffer.from(`${value}\0`, 'utf8')));
}

/** Types of the complete messages in `bytes` (type byte, then a length that counts itself). */
function messageTypes(bytes: Buffer): string[] {
  const types: string[] = [];
  for (let at = 0; at + 5 <= bytes.length;) {
    const end = at + 1 + bytes.readInt32BE(at + 1);
    if (end > bytes.length) break;
    types.push(String.fromCharCode(bytes[at] as number));
    at = end;
  }
  return types;
}

async function open(): Promise<Buffer> {
  const client = new pg.Client({ connectionString: url });
  const parameters: Buffer[] = [];
  let keyData = Buffer.alloc(8);
  client.connection.on('parameterStatus', (msg: { parameterName: string; parameterValue: string }) => {
    parameters.push(message('S', cString(msg.parameterName, msg.parameterValue)));
  });
  client.connection.on('backendKeyData', (msg: { processID: number; secretKey: number }) => {
    keyData = Buffer.alloc(8);
    keyData.writeInt32BE(msg.processID, 0);
    keyData.writeInt32BE(msg.secretKey, 4);
  });
  client.on('error', () => {});
  await client.connect();
  const socket = client.connection.stream as Duplex;
  socket.removeAllListeners('data');
  const current: Session = { socket, received: Buffer.alloc(0), closed: false, wake: undefined };
  socket.on('data', (chunk: Buffer) => {
    current.received = Buffer.concat([current.received, chunk]);
    current.wake?.();
  });
  socket.on('close', () => {
    current.closed = true;
    current.wake?.();
  });
  session = current;
  const authenticationOk = message('R', Buffer.alloc(4));
  return Buffer.concat([authenticationOk, ...parameters, message('K', keyData), message('Z', Buffer.from('I'))]);
}

async function untilReadyForQuery(current: Session): Promise<Buffer> {
  while (!current.closed && messageTypes(current.received).at(-1) !== 'Z') {
    await new Promise<void>((resolve) => (current.wake = resolve));
  }
  const answer = current.received;
  current.received = Buffer.alloc(0);
  return answer;
}

async function exchange(bytes: Uint8Array): Promise<Uint8Array> {
  if (!session) return open(); // the startup message, answered here
  const sent = Buffer.from(bytes);
  const current = session;
  const types = messageTypes(sent);
  current.socket.write(sent);
  if (types.includes('X')) {
    session = undefined;
    current.socket.end();
    return new Uint8Array();
  }
  const last = types.at(-1);
  if (last !== 'Q' && last !== 'S') return new Uint8Array();
  return untilReadyForQuery(current);
}

parentPort?.on('message', (bytes: Uint8Array) => {
  exchange(bytes)
    .then(
      (answer): WireReply => ({ bytes: answer }),
      (error: unknown): WireReply => ({ error: error instanceof Error ? error.message : String(error) }),
    )
    .then((reply) => {
      replies.postMessage(reply);
      Atomics.store(signal, 0, 1);
      Atomics.notify(signal, 0);
    });
});
