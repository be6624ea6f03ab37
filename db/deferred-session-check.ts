// The session check a request defers to its first statement (RequestTransaction.deferSession): the
// level it gates at (app.viewer_session_gate, its text from db/viewer.ts sessionGate), held until the
// transaction's opening takes it, or a statement that checks the session itself covers it.
import { sessionGate } from './viewer.ts';

export class DeferredSessionCheck {
  #level: number | null = null;

  /** Holds the check of the viewer's session at `level` (it replaces one held before). */
  defer(level: number): void {
    this.#level = level;
  }

  get pending(): boolean {
    return this.#level !== null;
  }

  /** The held check's text (simple-query, with its `;`), or '' when none; it is no longer held. */
  takeText(): string {
    const level = this.takeLevel();
    return level === null ? '' : sessionGate(level);
  }

  /** The held check's level, or null when none; it is no longer held. */
  takeLevel(): number | null {
    const level = this.#level;
    this.#level = null;
    return level;
  }

  /**
   * A statement that checks the session itself at `statementGateLevel` (as app.cast_vote does)
   * replaces the held check: true when there was one, which it must cover (else an Error, a
   * programming mistake); false when none was held (nothing to cover).
   */
  coverWith(statementGateLevel: number | undefined): boolean {
    if (statementGateLevel === undefined || this.#level === null) return false;
    if (statementGateLevel < this.#level) throw new Error(`statement gates at level ${statementGateLevel}, the request needs ${this.#level}`);
    this.#level = null;
    return true;
  }
}
