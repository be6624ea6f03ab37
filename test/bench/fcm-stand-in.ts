// The stand-in FCM (test/helpers/fcm.ts) in a process of its own, for the push benchmark: prints one
// JSON line { url, env, serviceAccountFile } and serves until killed.
import { startFcmStandIn } from '../helpers/fcm.ts';

const standIn = await startFcmStandIn({ dir: process.argv[2] });
process.stdout.write(`${JSON.stringify({ url: standIn.url, env: standIn.env, serviceAccountFile: standIn.serviceAccountFile })}\n`);
