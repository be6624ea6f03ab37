// The deploy benchmark's client (test/bench/deploy.ts), a separate process forked with an IPC
// channel so that its requests never share an event loop with the servers or the orchestrator.
// On `start` it keeps `concurrency` requests in flight, round robin over the API processes and over
// the kinds (home feed, post read, vote, comment), each on a connection of its own with a 10 s
// timeout, until `stop`; then it answers every request's start time, latency, kind and outcome.
import http from 'node:http';

export interface LoadStart {
  type: 'start';
  bases: string[];
  concurrency: number;
  /** Access tokens of the users, and the posts they read, vote on and comment on. */
  tokens: string[];
  posts: string[];
  timeoutMs: number;
}

export interface LoadRecord {
  /** ms since the load started. */
  at: number;
  ms: number;
  kind: string;
  base: number;
  /** The HTTP status, or 0 for a timeout or a broken connection. */
  status: number;
  ok: boolean;
  detail?: string;
}

const kinds = ['feed', 'read', 'vote', 'comment'] as const;
const positions = ['strong_left', 'left', 'neutral', 'right', 'strong_right'];

let stopping = false;
const records: LoadRecord[] = [];

function send(
  agent: http.Agent,
  base: URL,
  method: 'GET' | 'POST',
  path: string,
  token: string,
  timeoutMs: number,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${token}` };
    if (payload !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    const request = http.request(
      { agent, host: base.hostname, port: base.port, method, path: `${base.pathname}${path}`, headers, timeout: timeoutMs },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
        response.on('error', (error) => resolve({ status: 0, text: error.message }));
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', (error) => resolve({ status: 0, text: error.message }));
    request.end(payload);
  });
}

async function run(job: LoadStart): Promise<void> {
  const bases = job.bases.map((base) => new URL(base));
  // A connection per request: a kept-alive socket that the server closes as idle while the client
  // reuses it answers ECONNRESET (a race of keep-alive, not of the deploy), which would count here.
  const agents = bases.map(() => new http.Agent({ keepAlive: false, maxSockets: job.concurrency }));
  const started = performance.now();
  let next = 0;
  // Vote n is user n % users on post floor(n / users): every pair once.
  let votes = 0;
  const lane = async () => {
    while (!stopping) {
      const n = next++;
      const kind = kinds[n % kinds.length] as (typeof kinds)[number];
      const api = Math.floor(n / kinds.length) % bases.length;
      const user = (n * 7) % job.tokens.length;
      const token = job.tokens[user] as string;
      const post = job.posts[(n * 13) % job.posts.length] as string;
      const at = performance.now();
      let answer: { status: number; text: string };
      let expected: number;
      if (kind === 'feed') {
        answer = await send(agents[api] as http.Agent, bases[api] as URL, 'GET', '/posts?limit=20', token, job.timeoutMs);
        expected = 200;
      } else if (kind === 'read') {
        answer = await send(agents[api] as http.Agent, bases[api] as URL, 'GET', `/posts/${post}`, token, job.timeoutMs);
        expected = 200;
      } else if (kind === 'vote') {
        const v = votes++;
        const voter = job.tokens[v % job.tokens.length] as string;
        const target = job.posts[Math.floor(v / job.tokens.length) % job.posts.length] as string;
        answer = await send(agents[api] as http.Agent, bases[api] as URL, 'POST', `/posts/${target}/vote`, voter, job.timeoutMs, {
          position: positions[v % positions.length],
        });
        expected = 201;
      } else {
        answer = await send(agents[api] as http.Agent, bases[api] as URL, 'POST', `/posts/${post}/comments`, token, job.timeoutMs, {
          text: `comment ${n}`,
        });
        expected = 201;
      }
      const ms = performance.now() - at;
      const ok = answer.status === expected;
      records.push({
        at: at - started,
        ms,
        kind,
        base: api,
        status: answer.status,
        ok,
        ...(ok ? {} : { detail: `${answer.text.slice(0, 200)} (at ${((at - started) / 1000).toFixed(1)} s, after ${ms.toFixed(0)} ms)` }),
      });
    }
  };
  await Promise.all(Array.from({ length: job.concurrency }, lane));
  for (const agent of agents) agent.destroy();
}

let running: Promise<void> | undefined;
process.on('message', (message: LoadStart | { type: 'stop' }) => {
  if (message.type === 'start') {
    running = run(message);
    process.send?.({ type: 'started' });
  } else {
    stopping = true;
    void (running ?? Promise.resolve()).then(() => process.send?.({ type: 'records', records }));
  }
});
process.on('disconnect', () => process.exit(0));
