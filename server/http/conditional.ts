// Conditional GETs (contract 15, RFC 9110 section 13.1.2): every 200 answer to a GET under /api/v1
// (the notification stream aside: it writes its own answer) carries a strong ETag of its body,
// `Cache-Control: private, no-cache` (a phone may keep it, must ask again before using it, and no
// shared cache keeps it) and `Vary: Authorization` (one user's answer is never another's). A GET
// whose If-None-Match lists that tag, or is `*`, answers 304 with no body. The body is built first
// (the tag is of the bytes a 200 would send); what the 304 saves is the transfer.
import { createHash } from 'node:crypto';
import type { Response } from 'express';

/** The strong entity tag of a body: its SHA-256, base64url (no character that needs escaping). */
export function entityTag(body: string | Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url')}"`;
}

// An If-None-Match list (RFC 9110 5.6.1 and 8.8.3): entity-tags, each an optional W/ and a quoted
// opaque tag, separated by commas, empty elements allowed.
const opaqueTag = '"[\\x21\\x23-\\x7e\\x80-\\xff]*"';
const tagList = new RegExp(`^[\\s,]*(?:(?:W/)?${opaqueTag}[ \\t]*(?:,[\\s,]*|$))*$`);
const listedTags = new RegExp(`(?:W/)?(${opaqueTag})`, 'g');

/**
 * Whether If-None-Match matches `tag`: `*`, or a list with the same opaque tag (weak comparison,
 * as RFC 9110 13.1.2 asks: `W/` is ignored). A header that is not a valid list matches nothing
 * (the full answer is sent).
 */
export function noneMatchLists(header: string | undefined, tag: string): boolean {
  if (header === undefined) return false;
  const value = header.trim();
  if (value === '*') return true;
  if (!tagList.test(value)) return false;
  return [...value.matchAll(listedTags)].some((match) => match[1] === tag);
}

/**
 * Sends a 200 answer to a GET as `contentType`, with its validator and caching headers; a 304
 * without a body when the request's If-None-Match lists the tag. Other answers go out unchanged.
 */
export function sendCacheable(res: Response, status: number, body: string, contentType: string): void {
  if (status === 200 && (res.req.method === 'GET' || res.req.method === 'HEAD')) {
    const tag = entityTag(body);
    res.setHeader('ETag', tag);
    res.setHeader('Cache-Control', 'private, no-cache');
    res.vary('Authorization');
    if (noneMatchLists(res.req.get('If-None-Match'), tag)) {
      res.status(304).end();
      return;
    }
  }
  res.status(status).type(contentType).send(body);
}
