// A request's whole transaction as one extended-protocol batch with a single Sync: the
// viewer's settings (db/viewer.ts), the deferred session check when there is one
// (app.viewer_session_gate, as RequestTransaction.deferSession sends it) and one statement, all named
// prepared statements of the connection: Parse (first use only), Bind, Execute each, one Sync.
// PostgreSQL runs the messages before a Sync as one implicit transaction, committed at the Sync
// and rolled back when a statement fails (the rest up to the Sync is skipped). So no `begin` or
// `commit` statement is sent, nothing is parsed per request, and the server answers once (one
// ReadyForQuery, one write back) instead of three times. Parameters stay bind parameters (never
// in SQL text). Only the statement's rows are returned.
import pg from 'pg';
import { anonymousViewer, viewerSettings, type Viewer } from './viewer.ts';

const settings = {
  name: 'viewer_settings',
  // The settings' names are constants; their values are the statement's parameters.
  text: `select ${viewerSettings(anonymousViewer).map(([name], i) => `set_config('${name}', $${i + 1}, true)`).join(', ')}`,
};
// The session of the settings just made: the same check as RequestTransaction.deferSession's.
const gate = {
  name: 'viewer_session_gate',
  text: 'select app.viewer_session_gate($1::int)',
};

/** The parts of node-postgres' connection that a batch writes to (pg/lib/connection.js). */
interface WireConnection {
  parse(message: { name: string; text: string; types: unknown[] }): void;
  close(message: { type: 'S'; name: string }): void;
  bind(message: { portal: string; statement: string; values: (string | null)[] }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string }): void;
  sync(): void;
}

/**
 * The statements known to be prepared on a connection: those of a batch the server answered
 * without an error. node-postgres' own bookkeeping cannot tell (it takes the first ParseComplete of
 * a batch for its statement), so these names are this module's own, and until a batch succeeded a
 * statement is closed (not an error when absent) and parsed again.
 */
const prepared = new WeakMap<WireConnection, Set<string>>();

export class SingleSyncStatement<R extends pg.QueryResultRow> extends pg.Query<R> {
  readonly #viewer: Viewer;
  readonly #name: string;
  readonly #text: string;
  readonly #values: (string | null)[];
  readonly #gateLevel: number | null;
  /** The answers of the settings and the gate (a row, then a CommandComplete each) are not part of the result. */
  #unansweredLeaders: number;
  #connection: WireConnection | undefined;

  /** `gateLevel`: the deferred session check at that level, or null when there is none to send. */
  constructor(viewer: Viewer, gateLevel: number | null, name: string, text: string, values: (string | null)[]) {
    // No name for node-postgres: the batch prepares its statements itself (prepare below).
    super({ text, values });
    this.#viewer = viewer;
    this.#gateLevel = gateLevel;
    this.#unansweredLeaders = gateLevel === null ? 1 : 2;
    this.#name = name;
    this.#text = text;
    this.#values = values;
  }

  /** Resolves with the statement's result once the server answered the Sync. */
  result(): Promise<pg.QueryResult<R>> {
    return new Promise((resolve, reject) => {
      this.on('end', (result: pg.QueryResult<R>) => resolve(result));
      this.on('error', reject);
    });
  }

  /** Always the extended protocol (node-postgres would send a statement without values as a simple query). */
  requiresPreparation(): boolean {
    return true;
  }

  // Called by node-postgres (Query.submit) with the stream corked: the batch leaves in one write.
  // The statement is parsed after the settings ran: its names resolve as the viewer's role.
  prepare(connection: WireConnection): void {
    const known = prepared.get(connection) ?? new Set<string>();
    prepared.set(connection, known);
    this.#connection = connection;
    const statement = `single-sync:${this.#name}`;
    const viewer = this.#viewer;
    const run = (name: string, text: string, values: (string | null)[], describe: boolean) => {
      if (!known.has(name)) {
        connection.close({ type: 'S', name });
        connection.parse({ name, text, types: [] });
      }
      connection.bind({ portal: '', statement: name, values });
      if (describe) connection.describe({ type: 'P', name: '' });
      connection.execute({ portal: '' });
    };
    run(settings.name, settings.text, viewerSettings(viewer).map(([, value]) => value), false);
    if (this.#gateLevel !== null) run(gate.name, gate.text, [String(this.#gateLevel)], false);
    run(statement, this.#text, this.#values, true);
    connection.sync();
  }

  handleReadyForQuery(connection: unknown): void {
    const known = this.#connection && prepared.get(this.#connection);
    known?.add(settings.name).add(`single-sync:${this.#name}`);
    if (this.#gateLevel !== null) known?.add(gate.name);
    (pg.Query.prototype as unknown as SingleSyncStatement<R>).handleReadyForQuery.call(this, connection);
  }

  handleDataRow(message: unknown): void {
    if (this.#unansweredLeaders === 0) (pg.Query.prototype as unknown as SingleSyncStatement<R>).handleDataRow.call(this, message);
  }

  handleCommandComplete(message: unknown, connection: unknown): void {
    if (this.#unansweredLeaders > 0) {
      this.#unansweredLeaders -= 1;
      return;
    }
    (pg.Query.prototype as unknown as SingleSyncStatement<R>).handleCommandComplete.call(this, message, connection);
  }
}
