// The auth feature's work in the worker: housekeeping of expired sign-in secrets, and of the read
// floors of sessions gone quiet (db/replicas.ts).
import { workerFeature } from '../../feature.ts';
import { purgeExpiredAuth } from './purge-expired-auth.ts';
import { sweepSessionReadFloors } from './sweep-session-read-floors.ts';

export const auth = workerFeature({
  tasks: {
    purge_expired_auth: () => purgeExpiredAuth,
    sweep_session_read_floors: () => sweepSessionReadFloors,
  },
  schedules: {
    purge_expired_auth: '0 * * * *',
    sweep_session_read_floors: '*/15 * * * *',
  },
});
