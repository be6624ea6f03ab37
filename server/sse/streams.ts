// The server-sent-event streams open in this process (contract section 9), by session: headers,
// events, the `: ping` comment every pingSeconds, the close after maxSeconds, and at most
// maxPerSession open streams per session (opening one more closes the oldest, with a final
// comment). Which events a stream gets, and when a session's streams close, is decided by the hub
// (hub.ts).
import type { Response } from 'express';

export interface StreamOwner {
  userId: string;
  sessionId: string;
}

/** Where a notification stands in the order of delivery: its writing transaction, then its id. */
export type Position = readonly [bigint, string];

export interface SseEvent {
  /** Notification events carry the row's id; badge events have none (contract section 9). */
  id?: string;
  event: string;
  data: unknown;
  /** Live events carry it: a resumed stream drops those at or before its place. */
  position?: Position;
}

const isAfter = (position: Position, place: Position): boolean =>
  position[0] > place[0] || (position[0] === place[0] && position[1] > place[1]);

/** A client that stops reading is dropped once this much output waits for it (it reconnects and resumes). */
const maxBufferedBytes = 1024 * 1024;
/** Live events held for a stream while its replay is read; beyond this it is closed (the client resumes). */
const maxHeldEvents = 5000;
export const maxStreamsPerSession = 5;

export class SseStream {
  readonly owner: StreamOwner;
  /** The order in which streams opened in this process (SseStreams.lastOpened). */
  readonly sequence: number;
  #res: Response;
  #timing: { pingMs: number; maxMs: number };
  #timers: NodeJS.Timeout[] = [];
  #onClose: (stream: SseStream) => void;
  #closed = false;
  /** Whether the response has begun (status 200 and the headers sent). */
  #begun = false;
  /** Live events that arrive before the stream begins, or while its replay is read: sent after. */
  #held: SseEvent[] | undefined = [];
  /** The place a resumed stream started after (the client has every row up to it). */
  #after: Position | undefined;

  /**
   * Registers a stream that has not answered yet: live events for it are held until it begins
   * (begin), so that the request can check its session first and answer 200 only for a stream
   * that is set up.
   */
  constructor(
    res: Response,
    owner: StreamOwner,
    sequence: number,
    timing: { pingMs: number; maxMs: number },
    onClose: (stream: SseStream) => void,
  ) {
    this.owner = owner;
    this.sequence = sequence;
    this.#res = res;
    this.#timing = timing;
    this.#onClose = onClose;
    res.on('close', () => this.#release());
    // A client that left while the request was being authenticated: its 'close' has already passed.
    if (!res.socket || res.socket.destroyed) this.#release();
  }

  /**
   * Answers status 200 with the event-stream headers and starts the pings and the maximum
   * duration. Without `hold`, the events held so far follow at once and the stream is live; with
   * it, they wait for release (a resumed stream's replay goes first).
   */
  begin(hold: boolean): void {
    if (this.#closed || this.#begun) return;
    this.#begun = true;
    // Connection: close: a stream's connection is not reused once the stream ends (an hour later,
    // or at shutdown, which then does not wait for idle keep-alive connections).
    this.#res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-store',
      'X-Accel-Buffering': 'no',
      Connection: 'close',
    });
    this.#res.flushHeaders();
    this.#res.socket?.setNoDelay(true);
    this.#timers = [setInterval(() => this.#write(': ping\n\n'), this.#timing.pingMs), setTimeout(() => this.close(), this.#timing.maxMs)];
    if (!hold) this.release([], undefined, undefined);
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(event: SseEvent): void {
    if (this.#after && event.position && !isAfter(event.position, this.#after)) return;
    if (this.#held) {
      this.#held.push(event);
      if (this.#held.length > maxHeldEvents) this.close();
      return;
    }
    this.#write(`${event.id === undefined ? '' : `id: ${event.id}\n`}event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`);
  }

  /** Sends events in as few writes as the socket allows. */
  sendAll(events: SseEvent[]): void {
    if (this.#closed || events.length === 0) return;
    this.#res.cork();
    for (const event of events) this.send(event);
    this.#res.uncork();
  }

  /**
   * Sends the replayed events, then `comment` (if any), then the live events held meanwhile; from
   * now on, live events at or before `after` are dropped.
   */
  release(replayed: SseEvent[], comment: string | undefined, after: Position | undefined): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    this.#after = after;
    this.sendAll(replayed);
    if (comment) this.comment(comment);
    this.sendAll(held);
  }

  comment(text: string): void {
    this.#write(`: ${text}\n\n`);
  }

  /**
   * Ends the stream: a stream that has begun ends its response (the client sees the stream end);
   * one that has not leaves the answer to its request (SseStream.closed).
   */
  close(): void {
    if (this.#closed) return;
    if (this.#begun) this.#res.end();
    this.#release();
  }

  #write(text: string): void {
    if (this.#closed || !this.#begun) return;
    this.#res.write(text);
    if (this.#res.writableLength > maxBufferedBytes) this.#res.destroy();
  }

  #release(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#onClose(this);
  }
}

export class SseStreams {
  /** Per session, its open streams, oldest first. */
  #bySession = new Map<string, Set<SseStream>>();
  #count = 0;
  #lastOpened = 0;
  #sessionsVersion = 0;
  #timing: { pingMs: number; maxMs: number };

  constructor(timing: { pingSeconds: number; maxSeconds: number }) {
    this.#timing = { pingMs: timing.pingSeconds * 1000, maxMs: timing.maxSeconds * 1000 };
  }

  /** Open streams in this process. */
  get count(): number {
    return this.#count;
  }

  /** The sequence number of the latest stream opened (streams opened later have greater ones). */
  get lastOpened(): number {
    return this.#lastOpened;
  }

  /** Changes whenever a session gains its first open stream or loses its last. */
  get sessionsVersion(): number {
    return this.#sessionsVersion;
  }

  /** Registers a stream for the request; it answers when it begins (SseStream.begin). */
  open(res: Response, owner: StreamOwner): SseStream {
    const stream = new SseStream(res, owner, ++this.#lastOpened, this.#timing, (closed) => this.#forget(closed));
    if (stream.closed) return stream;
    let streams = this.#bySession.get(owner.sessionId);
    if (!streams) {
      streams = new Set();
      this.#sessionsVersion += 1;
    }
    for (const oldest of [...streams].slice(0, Math.max(0, streams.size - maxStreamsPerSession + 1))) {
      oldest.comment(`closed: more than ${maxStreamsPerSession} streams open for this session`);
      oldest.close();
    }
    streams.add(stream);
    this.#bySession.set(owner.sessionId, streams);
    this.#count += 1;
    return stream;
  }

  /** Session ids with at least one open stream. */
  sessions(): string[] {
    return [...this.#bySession.keys()];
  }

  /** Sends the events to the session's streams that opened at or before `openedUpTo`. */
  sendToSession(sessionId: string, events: SseEvent[], openedUpTo: number): void {
    for (const stream of this.#bySession.get(sessionId) ?? []) if (stream.sequence <= openedUpTo) stream.sendAll(events);
  }

  /** Closes every stream that opened at or before `openedUpTo`. */
  closeOpenedUpTo(openedUpTo: number): void {
    for (const streams of [...this.#bySession.values()])
      for (const stream of [...streams]) if (stream.sequence <= openedUpTo) stream.close();
  }

  closeSession(sessionId: string): void {
    for (const stream of [...(this.#bySession.get(sessionId) ?? [])]) stream.close();
  }

  closeAll(): void {
    for (const sessionId of this.sessions()) this.closeSession(sessionId);
  }

  #forget(stream: SseStream): void {
    const streams = this.#bySession.get(stream.owner.sessionId);
    if (!streams?.delete(stream)) return;
    this.#count -= 1;
    if (streams.size === 0) {
      this.#bySession.delete(stream.owner.sessionId);
      this.#sessionsVersion += 1;
    }
  }
}
