// The media benchmark's REST load (test/bench/media.ts), a process of its own forked with an IPC
// channel, so its requests never share an event loop with the service or the orchestrator. On
// `start` it keeps `concurrency` requests in flight over a mix of an app's reads (home feed, own
// profile, unread count, login config), each user in turn, until `stop`; then it answers the
// latencies of the requests that ended while the load ran, and the failures.
import http from 'node:http';

export interface MediaLoadStart {
  type: 'start';
  base: string;
  tokens: string[];
  concurrency: number;
}

export interface MediaLoadResult {
  type: 'result';
  latencies: number[];
  failures: string[];
}

const paths = ['/posts?limit=20', '/users/me/profile', '/notifications/unread-count', '/auth/login-config'];
let stopping = false;

function get(agent: http.Agent, base: URL, path: string, token: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const request = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: 'GET',
        path: `${base.pathname}${path}`,
        headers: { authorization: `Bearer ${token}` },
        timeout: 30_000,
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
        response.on('error', (error) => resolve({ status: 0, text: error.message }));
      },
    );
    request.on('timeout', () => request.destroy(new Error('no answer within 30 s')));
    request.on('error', (error) => resolve({ status: 0, text: error.message }));
    request.end();
  });
}

async function run(job: MediaLoadStart): Promise<MediaLoadResult> {
  const base = new URL(job.base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: job.concurrency });
  const latencies: number[] = [];
  const failures: string[] = [];
  let next = 0;
  const lane = async () => {
    while (!stopping) {
      const n = next++;
      const path = paths[n % paths.length] as string;
      const started = performance.now();
      const answer = await get(agent, base, path, job.tokens[n % job.tokens.length] as string);
      if (answer.status === 200) latencies.push(performance.now() - started);
      else failures.push(`${path}: ${answer.status} ${answer.text.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, lane));
  agent.destroy();
  return { type: 'result', latencies, failures };
}

let running: Promise<MediaLoadResult> | undefined;
process.on('message', (message: MediaLoadStart | { type: 'stop' }) => {
  if (message.type === 'start') {
    stopping = false;
    running = run(message);
    process.send?.({ type: 'started' });
  } else {
    stopping = true;
    void running?.then((result) => process.send?.(result));
  }
});
process.on('disconnect', () => process.exit(0));
