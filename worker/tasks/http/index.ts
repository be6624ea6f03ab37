// The endpoint framework's work in the worker (server/http, a shared kernel, not a feature): the
// hourly sweep of the answers kept for Idempotency-Key (server/http/idempotency.ts).
import { workerFeature } from '../../feature.ts';
import { purgeIdempotentAnswers } from './purge-idempotent-answers.ts';

export const http = workerFeature({
  tasks: {
    purge_idempotent_answers: () => purgeIdempotentAnswers,
  },
  schedules: { purge_idempotent_answers: '45 * * * *' },
});
