// The notifications feature's work in the worker: the fan-out of one hub event to the notifications
// of its members or admins (queued by the hub transition that caused it).
import { workerFeature } from '../../feature.ts';
import { hubNotificationFanout } from './hub-notification-fanout.ts';

export const notifications = workerFeature({
  tasks: {
    hub_notification_fanout: () => hubNotificationFanout,
  },
});
