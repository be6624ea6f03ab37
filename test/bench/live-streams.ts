// The stream clients of the live benchmark (test/bench/live.ts), in a process of their own: many
// GET /notifications/stream connections over node:http, each event timestamped on arrival.
// Driven over IPC:
//   { type: 'open', tokens }                 → opens one stream per token    → { type: 'opened', ms }
//   { type: 'close' }                        → closes every stream           → { type: 'closed' }
//   { type: 'collect' }                      → arrivals since the last collect, keyed by notification id and
//                                              by `post:<postId>` for post_voted rows → { type: 'arrivals', arrivals }
//   { type: 'resume', tokens, lastEventIds, expect } → opens one stream per token with Last-Event-ID, all at
//                                              once; each reports when `expect` events or a `: replay truncated`
//                                              arrived → { type: 'resumed', ms: per stream, events: per stream }
import http from 'node:http';

const now = () => performance.timeOrigin + performance.now();
const base = new URL(process.argv[2] as string);
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const open = new Set<http.ClientRequest>();
let arrivals: [string, number][] = [];

interface Handlers {
  onEvent?: (data: { id: string; type: string; postId: string | null }) => void;
  onComment?: (text: string) => void;
}

function stream(token: string, lastEventId: string | undefined, handlers: Handlers): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        path: `${base.pathname}/notifications/stream`,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'text/event-stream',
          ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
        },
      },
      (response) => {
        if (response.statusCode !== 200) {
          reject(new Error(`stream answered ${response.statusCode}`));
          response.resume();
          return;
        }
        resolve();
        let buffer = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            for (const line of block.split('\n')) {
              if (line.startsWith('data: ')) handlers.onEvent?.(JSON.parse(line.slice(6)));
              else if (line.startsWith(': ')) handlers.onComment?.(line.slice(2));
            }
          }
        });
        response.on('error', () => {});
      },
    );
    request.on('error', (error) => {
      open.delete(request);
      reject(error);
    });
    request.on('close', () => open.delete(request));
    open.add(request);
    request.end();
  });
}

const record = (data: { id: string; type: string; postId: string | null }) => {
  const at = now();
  arrivals.push([data.id, at]);
  if (data.type === 'post_voted') arrivals.push([`post:${data.postId}`, at]);
};

async function inBatches<T>(items: T[], size: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map((item, j) => fn(item, i + j)));
}

process.on('message', async (message: { type: string; tokens?: string[]; lastEventIds?: string[]; expect?: number }) => {
  const reply = (answer: unknown) => process.send?.(answer);
  if (message.type === 'open') {
    const started = now();
    await inBatches(message.tokens ?? [], 100, (token) => stream(token, undefined, { onEvent: record }));
    reply({ type: 'opened', ms: now() - started });
  } else if (message.type === 'close') {
    for (const request of open) request.destroy();
    open.clear();
    reply({ type: 'closed' });
  } else if (message.type === 'collect') {
    reply({ type: 'arrivals', arrivals });
    arrivals = [];
  } else if (message.type === 'resume') {
    const tokens = message.tokens ?? [];
    const started = now();
    const ms: number[] = [];
    const events: number[] = [];
    await Promise.all(
      tokens.map(
        (token, i) =>
          new Promise<void>((resolve) => {
            let count = 0;
            let done = false;
            const finish = () => {
              if (done) return;
              done = true;
              ms[i] = now() - started;
              events[i] = count;
              resolve();
            };
            const timer = setTimeout(finish, 60_000);
            stream(token, message.lastEventIds?.[i], {
              onEvent: () => {
                count += 1;
                if (count >= (message.expect ?? 0)) finish();
              },
              onComment: (text) => {
                if (text === 'replay truncated') finish();
              },
            }).catch(finish);
            void timer;
          }),
      ),
    );
    reply({ type: 'resumed', ms, events });
  }
});
process.send?.({ type: 'ready' });
