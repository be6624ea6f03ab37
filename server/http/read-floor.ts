// The session's read floor, carried by the client (contract part 17; db/replicas.ts). With replicas
// configured, every answer the primary gave a signed-in request carries `Read-Floor`: the WAL
// position a replica must have replayed to show that session what it has written and read so far,
// with an HMAC over the session id and the position under a key derived from JWT_SECRET (so every
// API process checks it, and a floor of one session means nothing in another). A client that sends
// the last one it got back on its reads lets an API process check the session and the floor on the
// replica, without the primary; a read without it (or with one that does not verify) is checked on
// the primary as before. A floor only ever decides where the session's own reads run: forging one
// can make them older (its own loss) or send them to the primary (as not sending one does).
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { lsnBytes, lsnText } from '../../db/replicas.ts';

export const readFloorHeader = 'Read-Floor';

const keys = new Map<string, Buffer>();

function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', secret, '', 'read-floor/v1', 32));
    keys.set(secret, key);
  }
  return key;
}

function mac(secret: string, sessionId: string, position: string): Buffer {
  return createHmac('sha256', keyOf(secret)).update(`${sessionId}\n${position}`).digest().subarray(0, 16);
}

/** `<position>.<mac>`: the position as PostgreSQL writes it ('16/B374D848'), the mac in base64url. */
export function signReadFloor(secret: string, sessionId: string, floor: bigint): string {
  const position = lsnText(floor);
  return `${position}.${mac(secret, sessionId, position).toString('base64url')}`;
}

/** The floor a request carries for its session; undefined when none, or one that does not verify. */
export function readFloorOf(req: Request, secret: string, sessionId: string): bigint | undefined {
  const value = req.headers['read-floor'];
  if (typeof value !== 'string') return undefined;
  const match = /^([0-9A-F]{1,8}\/[0-9A-F]{1,8})\.([A-Za-z0-9_-]{22})$/.exec(value);
  if (!match) return undefined;
  const [, position, sent] = match as unknown as [string, string, string];
  const expected = mac(secret, sessionId, position);
  const given = Buffer.from(sent, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  return lsnBytes(position);
}

export function setReadFloor(res: Response, secret: string, sessionId: string, floor: bigint): void {
  if (!res.headersSent) res.setHeader(readFloorHeader, signReadFloor(secret, sessionId, floor));
}
