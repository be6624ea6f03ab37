// Notifications in tests: rows inserted as the owner (the features that write them have their own
// tests), and a streaming reader of GET /notifications/stream over a real socket (fetch), which
// keeps comment lines and the end of the stream, which EventSource hides.
import pg from 'pg';
import type { TestApp } from './app.ts';

export interface NotificationFields {
  type?: string;
  actorId?: string | null;
  postId?: string | null;
  commentId?: string | null;
  hubId?: string | null;
  invitationId?: string | null;
  joinRequestId?: string | null;
  /** Seconds before now (rows of the past). */
  ageSeconds?: number;
  readAt?: Date | null;
}

/** A LISTEN connection of the owner: the payloads announced on `channel`, in order of arrival. */
export async function listenTo(app: TestApp, channel: string): Promise<{ payloads: string[]; end(): Promise<void> }> {
  const client = new pg.Client({ connectionString: app.ownerUrl });
  await client.connect();
  const payloads: string[] = [];
  client.on('notification', (message) => payloads.push(message.payload ?? ''));
  await client.query(`listen ${channel}`);
  return { payloads, end: () => client.end() };
}

/** Inserts one notification as the owner, in its own transaction; returns its id. */
export async function insertNotification(app: TestApp, recipientId: string, fields: NotificationFields = {}): Promise<string> {
  const { rows } = await app.owner.query<{ id: string }>(
    `insert into app.notifications (recipient_id, type, actor_id, post_id, comment_id, hub_id, invitation_id, join_request_id, created_at, read_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, now() - make_interval(secs => $9), $10)
     returning id`,
    [
      recipientId,
      fields.type ?? 'user_followed',
      fields.actorId ?? null,
      fields.postId ?? null,
      fields.commentId ?? null,
      fields.hubId ?? null,
      fields.invitationId ?? null,
      fields.joinRequestId ?? null,
      fields.ageSeconds ?? 0,
      fields.readAt ?? null,
    ],
  );
  return (rows[0] as { id: string }).id;
}

export interface StreamEvent {
  id: string | undefined;
  event: string | undefined;
  data: any;
  /** performance.now() when the event was parsed. */
  at: number;
}

export interface TestStream {
  status: number;
  headers: Headers;
  /** The JSON error body of a refused stream. */
  body: any;
  events: StreamEvent[];
  comments: string[];
  /** Event ids and comment lines in the order they arrived. */
  sequence: string[];
  /** Resolves when the server ends the stream (or the socket drops). */
  ended: Promise<void>;
  hasEnded(): boolean;
  /** Waits until at least `count` events arrived (rejects after timeoutMs). */
  waitForEvents(count: number, timeoutMs?: number): Promise<StreamEvent[]>;
  /** Waits for the event of one notification id. */
  waitForId(id: string, timeoutMs?: number): Promise<StreamEvent>;
  /** Waits for a comment line. */
  waitForComment(comment: string, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** Opens GET /notifications/stream of the server at `baseUrl` (a test app's url, or another process's). */
export async function openStream(
  baseUrl: string,
  token?: string,
  headers: Record<string, string> = { accept: 'text/event-stream' },
): Promise<TestStream> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/api/v1/notifications/stream`, {
    headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    signal: controller.signal,
  });
  const events: StreamEvent[] = [];
  const comments: string[] = [];
  const sequence: string[] = [];
  const waiters = new Set<() => void>();
  let ended = false;
  const notify = () => {
    for (const waiter of waiters) waiter();
  };

  let body: any;
  let done: Promise<void>;
  if (response.status !== 200 || !response.body) {
    body = await response.json().catch(() => undefined);
    ended = true;
    done = Promise.resolve();
  } else {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    done = (async () => {
      let buffer = '';
      try {
        for (;;) {
          const { value, done: finished } = await reader.read();
          if (finished) break;
          buffer += value;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event: StreamEvent = { id: undefined, event: undefined, data: undefined, at: performance.now() };
            let isEvent = false;
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) {
                comments.push(line);
                sequence.push(line);
              }
              const match = /^(id|event|data): (.*)$/.exec(line);
              if (!match) continue;
              isEvent = true;
              const [, field, text] = match as unknown as [string, 'id' | 'event' | 'data', string];
              event[field] = field === 'data' ? JSON.parse(text) : text;
            }
            if (isEvent) {
              events.push(event);
              sequence.push(event.id ?? '');
            }
            notify();
          }
        }
      } catch {
        // aborted by the test or dropped
      } finally {
        ended = true;
        notify();
      }
    })();
  }

  // Generous: delivery waits for the oldest writing transaction of the whole cluster (xmin), and
  // other test files run migrations and long transactions on the same cluster meanwhile.
  function waitUntil<T>(found: () => T | undefined, what: string, timeoutMs = 15_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const value = found();
        if (value !== undefined) {
          cleanup();
          resolve(value);
        } else if (ended) {
          cleanup();
          reject(new Error(`stream ended without ${what} (${events.length} events)`));
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for ${what} (${events.length} events)`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });
  }

  return {
    status: response.status,
    headers: response.headers,
    body,
    events,
    comments,
    sequence,
    ended: done,
    hasEnded: () => ended,
    waitForEvents: (count, timeoutMs) => waitUntil(() => (events.length >= count ? events : undefined), `${count} events`, timeoutMs),
    waitForId: (id, timeoutMs) => waitUntil(() => events.find((event) => event.id === id), `the event of ${id}`, timeoutMs),
    waitForComment: async (comment, timeoutMs) => {
      await waitUntil(() => (comments.includes(comment) ? true : undefined), comment, timeoutMs);
    },
    close: () => controller.abort(),
  };
}

/** Resolves `true` when the stream ends within timeoutMs, else `false`. */
export async function endsWithin(stream: TestStream, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  const result = await Promise.race([stream.ended.then(() => true as const), timeout]);
  clearTimeout(timer);
  return result;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
