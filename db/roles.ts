// Login roles of the API and the worker (design.md "Roles"). Their passwords are derived from the
// owner's credentials, so every process that knows DATABASE_URL agrees on them without more
// configuration, and knowing a derived password reveals nothing of the owner's.
import { createHmac } from 'node:crypto';

export type LoginRole = 'authenticator' | 'app_worker';

function clusterKey(ownerUrl: string): string {
  const url = new URL(ownerUrl);
  return `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}@${url.host}`;
}

export function rolePassword(ownerUrl: string, role: LoginRole): string {
  return createHmac('sha256', clusterKey(ownerUrl)).update(`role:${role}`).digest('base64url');
}

export function roleUrl(ownerUrl: string, role: LoginRole): string {
  const url = new URL(ownerUrl);
  url.username = role;
  url.password = rolePassword(ownerUrl, role);
  return url.toString();
}
