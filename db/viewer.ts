// The viewer of a transaction: `set local role` to the viewer's role and the viewer's identity in
// `app.user_id` / `app.session_id` (`set local`), so row-level security decides what the
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

/**
 * The settings that carry a viewer into SQL, in the order every form applies them: the one place
 * they are written. beginAs (requests, the live reader, SQL tests) and internal GraphQL
 * (server/graphql/auth.ts pgSettingsOf) both build theirs from it.
 */
export function viewerSettings(viewer: Viewer): [name: string, value: string][] {
  return [
    ['role', viewer.role],
    ['app.user_id', viewer.userId ?? ''],
    ['app.session_id', viewer.sessionId ?? ''],
  ];
}

export function sqlLiteral(value: string | null): string {
  if (value === null) return 'null';
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * `begin` plus the viewer's settings and `extra` ones (a request's statement_timeout and
 * lock_timeout), as one simple-query text (one round trip), every setting local to the transaction
 * (`set local`), so nothing outlives it on the connection (safe behind a transaction-mode pooler).
 * `set local` is a utility statement: nothing to plan or execute, where one `select` of
 * set_config(..., true) calls was planned and run on every request (measured on PostgreSQL 18:
 * 44 µs of the server's CPU for the opening against 70 µs). Names are this module's (checked
 * here); values are quoted literals of verified identifiers (a signed token checked against the
 * database), a role name and numbers.
 */
export function beginAs(viewer: Viewer, extra: [name: string, value: string][] = []): string {
  const settings = [...viewerSettings(viewer), ...extra].map(([name, value]) => {
    if (!/^[a-z_]+(\.[a-z_]+)?$/.test(name)) throw new Error(`not a setting name: ${name}`);
    return `set local ${name} = ${sqlLiteral(value)};`;
  });
  return `begin; ${settings.join(' ')}`;
}

/**
 * The session check of the transaction's viewer (sent after its settings) as one simple-query
 * statement: app.viewer_session_gate raises UNAUTHORIZED when the session is not live, else the 403
 * code of the first level below `level` the user lacks.
 */
export function sessionGate(level: number): string {
  return `select app.viewer_session_gate(${Number(level)});`;
}
