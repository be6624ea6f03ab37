// How every measured phase of the benchmarks starts: the database vacuumed and analysed (so
// autovacuum does not start in the middle of one phase) and a checkpoint just done (so each phase
// pays the same full-page writes after it, instead of whichever phase a timed checkpoint lands
// in). A login that may not CHECKPOINT (not a superuser) skips that part.
import type pg from 'pg';

export async function startPhase(owner: pg.Pool): Promise<void> {
  await owner.query('vacuum analyze');
  await owner.query('checkpoint').catch(() => undefined);
}
