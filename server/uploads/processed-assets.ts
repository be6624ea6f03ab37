// Waiting for an image's processing (POST /uploads/complete, contract part 18): the worker's last
// step announces the asset id on channel asset_processed (app_private.finish_image and fail_image),
// the process's listening connection (server/sse/hub.ts) hands it here, and the waiting request
// reads the asset again. An announcement can be missed while that connection is down, so a
// reconnection wakes every waiter, and a waiter reads again at least every `maxWaitMs` anyway.
export class ProcessedAssets {
  #waiters = new Map<string, Set<() => void>>();

  /** An asset's processing ended (ready or failed). */
  announce(assetId: string): void {
    const waiters = this.#waiters.get(assetId);
    if (!waiters) return;
    this.#waiters.delete(assetId);
    for (const wake of waiters) wake();
  }

  /** Announcements may have been missed: every waiter reads again. */
  wakeAll(): void {
    const all = [...this.#waiters.values()];
    this.#waiters.clear();
    for (const waiters of all) for (const wake of waiters) wake();
  }

  /** Resolves when the asset is announced, everything is woken, or after `ms`. */
  wait(assetId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let waiters = this.#waiters.get(assetId);
      if (!waiters) this.#waiters.set(assetId, (waiters = new Set()));
      const wake = () => {
        clearTimeout(timer);
        this.#waiters.get(assetId)?.delete(wake);
        if (this.#waiters.get(assetId)?.size === 0) this.#waiters.delete(assetId);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      waiters.add(wake);
    });
  }

  /** Requests waiting now (for tests and metrics). */
  get waiting(): number {
    let count = 0;
    for (const waiters of this.#waiters.values()) count += waiters.size;
    return count;
  }
}
