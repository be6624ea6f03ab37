// The reports feature's work in the worker: ending a suspension for a time when its term is over.
import { workerFeature } from '../../feature.ts';
import { liftSuspension } from './lift-suspension.ts';

export const reports = workerFeature({
  tasks: {
    lift_suspension: () => liftSuspension,
  },
});
