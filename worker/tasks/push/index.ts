// The push feature's work in the worker: the hourly housekeeping of push delivery. The delivery
// itself is not a job: the Pusher (pusher.ts, FCM HTTP v1 through fcm.ts, access-token.ts and
// message.ts) runs beside the runner when FCM is configured, started by main.ts.
import { workerFeature } from '../../feature.ts';
import { purgePush } from './purge-push.ts';

export const push = workerFeature({
  tasks: {
    purge_push: () => purgePush,
  },
  schedules: { purge_push: '30 * * * *' },
});
