// The HTTP load generator of the vote benchmark, in its own thread so that the client does not
// share the server's event loop: votes with `concurrency` requests in flight, reports votes/s.
import { parentPort, workerData } from 'node:worker_threads';

interface Job {
  base: string;
  votes: { token: string; postId: string; position: string }[];
  concurrency: number;
}

const { base, votes, concurrency } = workerData as Job;
let next = 0;
let failure: string | undefined;
const started = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < votes.length && !failure) {
      const vote = votes[next++] as Job['votes'][number];
      const response = await fetch(`${base}/posts/${vote.postId}/vote`, {
        method: 'POST',
        headers: { authorization: `Bearer ${vote.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ position: vote.position }),
      });
      const text = await response.text();
      if (response.status !== 201) failure = `vote answered ${response.status}: ${text}`;
    }
  }),
);
parentPort?.postMessage({ rate: votes.length / ((performance.now() - started) / 1000), failure });
