// The server-sent-event streams open in this process (contract section 9), by session: headers,
// events, the `: ping` comment every pingSeconds, and the close after maxSeconds. Which events a
// stream gets, and when a session's streams close, is decided by the hub (hub.ts).
import type { Response } from 'express';

export interface StreamOwner {
  userId: string;
  sessionId: string;
}

export interface SseEvent {
  id: string;
  event: string;
  data: unknown;
}

/** A client that stops reading is dropped once this much output waits for it (it reconnects and re-reads the list). */
const maxBufferedBytes = 1024 * 1024;

export class SseStream {
  readonly owner: StreamOwner;
  #res: Response;
  #timers: NodeJS.Timeout[];
  #onClose: (stream: SseStream) => void;
  #closed = false;

  constructor(res: Response, owner: StreamOwner, timing: { pingMs: number; maxMs: number }, onClose: (stream: SseStream) => void) {
    this.owner = owner;
    this.#res = res;
    this.#onClose = onClose;
    // Connection: close: a stream's connection is not reused once the stream ends (an hour later,
    // or at shutdown, which then does not wait for idle keep-alive connections).
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no', Connection: 'close' });
    res.flushHeaders();
    res.socket?.setNoDelay(true);
    this.#timers = [setInterval(() => this.#write(': ping\n\n'), timing.pingMs), setTimeout(() => this.close(), timing.maxMs)];
    res.on('close', () => this.#release());
    // A client that left while the request was being authenticated: its 'close' has already passed.
    if (!res.socket || res.socket.destroyed) this.#release();
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(event: SseEvent): void {
    this.#write(`id: ${event.id}\nevent: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`);
  }

  /** Ends the response; the client sees the stream end. */
  close(): void {
    if (this.#closed) return;
    this.#res.end();
    this.#release();
  }

  #write(text: string): void {
    if (this.#closed) return;
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
  #bySession = new Map<string, Set<SseStream>>();
  #timing: { pingMs: number; maxMs: number };

  constructor(timing: { pingSeconds: number; maxSeconds: number }) {
    this.#timing = { pingMs: timing.pingSeconds * 1000, maxMs: timing.maxSeconds * 1000 };
  }

  /** Answers the request with a stream (status 200 and the event-stream headers) and registers it. */
  open(res: Response, owner: StreamOwner): SseStream {
    const stream = new SseStream(res, owner, this.#timing, (closed) => this.#forget(closed));
    if (stream.closed) return stream;
    const streams = this.#bySession.get(owner.sessionId) ?? new Set();
    streams.add(stream);
    this.#bySession.set(owner.sessionId, streams);
    return stream;
  }

  /** Open streams. */
  get count(): number {
    let count = 0;
    for (const streams of this.#bySession.values()) count += streams.size;
    return count;
  }

  /** Session ids with at least one open stream. */
  sessions(): string[] {
    return [...this.#bySession.keys()];
  }

  send(sessionId: string, events: SseEvent[]): void {
    for (const stream of this.#bySession.get(sessionId) ?? []) {
      for (const event of events) stream.send(event);
    }
  }

  closeSession(sessionId: string): void {
    for (const stream of [...(this.#bySession.get(sessionId) ?? [])]) stream.close();
  }

  closeAll(): void {
    for (const sessionId of this.sessions()) this.closeSession(sessionId);
  }

  #forget(stream: SseStream): void {
    const streams = this.#bySession.get(stream.owner.sessionId);
    streams?.delete(stream);
    if (streams?.size === 0) this.#bySession.delete(stream.owner.sessionId);
  }
}
