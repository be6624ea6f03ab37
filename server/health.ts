// GET /healthz: the process answers. GET /readyz: the database answers (as the API login role, within
// 2 s), every migration this checkout ships is applied and its db/sql files are applied as they are
// (by content hash); 503 otherwise. Outside /api/v1, no auth,
// plain JSON (not the API envelope: load balancers and orchestrators read the status code).
import express from 'express';
import type pg from 'pg';
import { pendingSqlFiles, shippedMigrations, shippedSqlFiles } from '../db/migrate.ts';

const readinessTimeoutMs = 2000;

export function healthRouter(pool: pg.Pool): express.Router {
  const shipped = shippedMigrations();
  const shippedFiles = shippedSqlFiles().map(({ file, sha256 }) => ({ file, sha256 }));
  const router = express.Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const [applied, files] = await Promise.race([
        Promise.all([
          pool.query<{ name: string }>('select name from app_private.applied_migrations() as name'),
          pool.query<{ file: string; sha256: string }>('select file, sha256 from app_private.applied_sql_files()'),
        ]),
        new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error('no answer within 2 s')), readinessTimeoutMs))),
      ]);
      const names = new Set(applied.rows.map((row) => row.name));
      const hashes = new Map(files.rows.map((row) => [row.file, row.sha256]));
      const pending = [
        ...shipped.filter((name) => !names.has(name)),
        ...pendingSqlFiles(hashes, shippedFiles).map((file) => `db/sql/${file}`),
      ];
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
