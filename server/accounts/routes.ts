// Every account endpoint (contract 13), in one list for the app (server/features.ts): deleting the
// account and exporting its data.
import { deletionEndpoints } from './deletion.ts';
import { exportEndpoints } from './exports.ts';

export const endpoints = [...deletionEndpoints, ...exportEndpoints];
