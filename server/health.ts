// GET /healthz: the process answers. GET /readyz: the database answers (as the API login role, within
// 2 s) and has what this build needs: every migration this build ships, and db/sql at this build's
// level or higher (db/migrate.ts missingForBuild); 503 otherwise. A database that a newer release
// migrated is ready for this build too (migrations only expand), so a running release stays in its
// balancer while the next one migrates. Outside /api/v1, no auth, plain JSON (not the API envelope:
// load balancers and orchestrators read the status code).
import express from 'express';
import type pg from 'pg';
import { missingForBuild } from '../db/migrate.ts';

const readinessTimeoutMs = 2000;

/** A database older than the level's reader (its function is not there yet): nothing of db/sql's level applied. */
const undefinedFunction = '42883';

export function healthRouter(pool: pg.Pool): express.Router {
  const router = express.Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const [applied, level] = await Promise.race([
        Promise.all([
          pool.query<{ name: string }>('select name from app_private.applied_migrations() as name'),
          pool.query<{ level: number }>('select app_private.applied_sql_level() as level').then(
            (result) => result.rows[0]?.level ?? 0,
            (error: unknown) => {
              if ((error as { code?: string }).code === undefinedFunction) return 0;
              throw error;
            },
          ),
        ]),
        new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error('no answer within 2 s')), readinessTimeoutMs))),
      ]);
      const pending = missingForBuild({ migrations: new Set(applied.rows.map((row) => row.name)), sqlLevel: level });
      if (pending.length > 0) res.status(503).json({ status: 'migrations pending', pending });
      else res.json({ status: 'ready' });
    } catch (error) {
      res.status(503).json({ status: 'database unavailable', reason: (error as Error).message });
    } finally {
      clearTimeout(timer);
    }
  });
  return router;
}
