// Notifies a hub's active members or admins of one event: one set-based insert
// (app_private.fan_out_hub_notification), queued by the transition that caused it.
import type { Task } from 'graphile-worker';

export const hubNotificationFanout: Task = async (payload, { withPgClient }) => {
  await withPgClient((client) => client.query('select app_private.fan_out_hub_notification($1)', [JSON.stringify(payload)]));
};
