// What a benchmark starts (a PostgreSQL, a PgBouncer, processes) is stopped when the run ends, also
// when it fails: a failed run must leave no server behind on a shared machine. Each resource
// registers its stop as soon as it exists; cleanUp() runs them in reverse order (once).
const steps: (() => Promise<unknown>)[] = [];

export function stopOnExit(step: () => Promise<unknown>): void {
  steps.push(step);
}

export async function cleanUp(): Promise<void> {
  for (const step of steps.splice(0).reverse()) await step().catch(() => undefined);
}

// A failure (a rejected top-level await, an unhandled 'error' event) stops everything, then exits 1.
process.on('uncaughtException', (error) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  void cleanUp().finally(() => process.exit(1));
});
