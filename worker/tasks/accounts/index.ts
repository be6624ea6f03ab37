// The accounts feature's work in the worker (contract 13): the data export archive, and the purge of
// an account 30 days after its deletion was requested.
import { workerFeature } from '../../feature.ts';
import { exportAccount } from './export-account.ts';
import { purgeAccount } from './purge-account.ts';

export const accounts = workerFeature({
  tasks: {
    export_account: ({ storage }) => exportAccount(storage),
    purge_account: ({ storage }) => purgeAccount(storage),
  },
});
