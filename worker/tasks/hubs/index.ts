// The hubs feature's work in the worker: carrying each hub's latest activity to its members' rows
// of GET /users/me/hubs, every minute.
import { workerFeature } from '../../feature.ts';
import { propagateHubActivity } from './propagate-hub-activity.ts';

export const hubs = workerFeature({
  tasks: {
    propagate_hub_activity: () => propagateHubActivity,
  },
  schedules: { propagate_hub_activity: '* * * * *' },
});
