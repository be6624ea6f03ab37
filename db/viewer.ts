// The viewer of a transaction: `set local role` to the viewer's role and the viewer's identity in
// `app.user_id` / `app.session_id` (set_config(..., true)), so row-level security decides what the
// transaction sees. Nothing else passes identity to SQL. Requests use it through
// db/request-transaction.ts; the live notification reader and the SQL tests through beginAs.
export type ViewerRole = 'app_anonymous' | 'app_user' | 'app_admin';

export interface Viewer {
  role: ViewerRole;
  userId: string | null;
  sessionId: string | null;
}

export const anonymousViewer: Viewer = { role: 'app_anonymous', userId: null, sessionId: null };

export function userViewer(userId: string, sessionId: string | null = null): Viewer {
  return { role: 'app_user', userId, sessionId };
}

export function sqlLiteral(value: string | null): string {
  if (value === null) return 'null';
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * `begin` plus the viewer's settings, as one simple-query text (one round trip). Values are quoted
 * literals of verified identifiers (a signed token checked against the database) and a role name.
 */
export function beginAs(viewer: Viewer): string {
  return (
    `begin; select set_config('role', ${sqlLiteral(viewer.role)}, true), ` +
    `set_config('app.user_id', ${sqlLiteral(viewer.userId ?? '')}, true), ` +
    `set_config('app.session_id', ${sqlLiteral(viewer.sessionId ?? '')}, true);`
  );
}

/**
 * The session check of a signed-in viewer as one simple-query statement: app.session_gate over
 * app.session_access_level raises UNAUTHORIZED when the session is not live, else the 403 code of
 * the first level below `level` the user lacks.
 */
export function sessionGate(viewer: Viewer, level: number): string {
  return `select app.session_gate(app.session_access_level(${sqlLiteral(viewer.sessionId)}, ${sqlLiteral(viewer.userId)}), ${level});`;
}
