// The session check a request defers to its first statement (RequestTransaction.deferSession): the
// check's text (app.viewer_session_gate, db/viewer.ts sessionGate) and the level it gates at, held until
// the transaction's opening takes it, or a statement that checks the session itself covers it.
import { sessionGate } from './viewer.ts';

export class DeferredSessionCheck {
  #text = '';
  #level = 0;

  /** Holds the check of the viewer's session at `level` (it replaces one held before). */
  defer(level: number): void {
    this.#text = sessionGate(level);
    this.#level = level;
  }

  get pending(): boolean {
    return this.#text !== '';
  }

  /** The held check's text (simple-query, with its `;`), or '' when none; it is no longer held. */
  takeText(): string {
    const text = this.#text;
    this.#text = '';
    return text;
  }

  /** The held check's level, or null when none; it is no longer held. */
  takeLevel(): number | null {
    const level = this.#text ? this.#level : null;
    this.#text = '';
    return level;
  }

  /**
   * A statement that checks the session itself at `statementGateLevel` (as app.cast_vote does)
   * replaces the held check: true when there was one, which it must cover (else an Error, a
   * programming mistake); false when none was held (nothing to cover).
   */
  coverWith(statementGateLevel: number | undefined): boolean {
    if (statementGateLevel === undefined || !this.#text) return false;
    if (statementGateLevel < this.#level) throw new Error(`statement gates at level ${statementGateLevel}, the request needs ${this.#level}`);
    this.#text = '';
    return true;
  }
}
