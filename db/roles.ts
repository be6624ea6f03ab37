// Login roles of the API and the worker (design.md "Roles"). Their passwords are derived from the
// owner's credentials, so every process that knows DATABASE_URL agrees on them without more
// configuration, and knowing a derived password reveals nothing of the owner's. The route to the
// server (host and port) is not part of it: a process reaching the database through a pooler or a
// proxy derives the same passwords as the one that ran the migrations (roles are cluster-wide).
import { createHmac } from 'node:crypto';

export type LoginRole = 'authenticator' | 'app_worker';

function ownerKey(ownerUrl: string): string {
  const url = new URL(ownerUrl);
  return `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
}

export function rolePassword(ownerUrl: string, role: LoginRole): string {
  return createHmac('sha256', ownerKey(ownerUrl)).update(`role:${role}`).digest('base64url');
}

/** `role`'s login to the database of `ownerUrl`, reached at `route` (a pooler's address; the owner's own by default). */
export function roleUrl(ownerUrl: string, role: LoginRole, route: string = ownerUrl): string {
  const url = new URL(route);
  url.username = role;
  url.password = rolePassword(ownerUrl, role);
  return url.toString();
}
