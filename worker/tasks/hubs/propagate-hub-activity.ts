// Every minute: carries each queued hub's latest activity to the rows of GET /users/me/hubs of
// its members, invitees and requesters (app_private.propagate_hub_activity, db/sql/hubs/activity.sql), one
// transaction of at most `batch` rows at a time, until no hub is due or the run has lasted
// `budgetMs` (the next minute's run goes on where this one stopped). The actor's own row moved
// with the action; this is the rest of the hub.
import type { Task } from 'graphile-worker';

const batch = 1000;
const budgetMs = 50_000;

export const propagateHubActivity: Task = async (_payload, { withPgClient }) => {
  const started = Date.now();
  await withPgClient(async (client) => {
    while (Date.now() - started < budgetMs) {
      const { rows } = await client.query<{ scanned: number | null }>('select app_private.propagate_hub_activity($1) as scanned', [batch]);
      if (rows[0]?.scanned === null || rows[0]?.scanned === undefined) return;
    }
  });
};
