// The HTTP load generator of the vote benchmark, in its own thread so that the client does not
// share the server's event loop. node:http with keep-alive (lighter than fetch), `concurrency`
// requests in flight; reports votes/s.
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

interface Job {
  base: string;
  votes: { token: string; postId: string; position: string }[];
  concurrency: number;
}

const { base, votes, concurrency } = workerData as Job;
const target = new URL(base);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

function post(path: string, token: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path: `${target.pathname}${path}`,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

let next = 0;
let failure: string | undefined;
const started = performance.now();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < votes.length && !failure) {
      const vote = votes[next++] as Job['votes'][number];
      const response = await post(`/posts/${vote.postId}/vote`, vote.token, JSON.stringify({ position: vote.position }));
      if (response.status !== 201) failure = `vote answered ${response.status}: ${response.text}`;
    }
  }),
);
agent.destroy();
parentPort?.postMessage({ rate: votes.length / ((performance.now() - started) / 1000), failure });
