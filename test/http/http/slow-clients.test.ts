// Clients that send a request slowly (a byte a second) are closed within a bounded time, with 408
// REQUEST_TIMEOUT in the envelope, while a request that has been received may stay open as long as
// its response lasts: an event stream (GET /notifications/stream) outlives both timeouts. The
// server here is the application's own (createServer) with short timeouts, on the test database.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, requestTimeouts } from '../../../server/app.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { userAtLevel } from '../../helpers/users.ts';

const timeouts = { headersMs: 1_000, requestMs: 2_000, checkEveryMs: 200 };
let app: TestApp;
let server: Server;
let port: number;
beforeAll(async () => {
  app = await startTestApp();
  server = createServer(app.services, timeouts).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await app.close();
});

interface Trickle {
  /** What the server sent. */
  received: string;
  /** Milliseconds from the first byte to the server closing the socket. */
  closedAfterMs: number;
}

/** A client that sends `text` one byte every `everyMs`, until the server closes the socket. */
function trickle(text: string, everyMs: number): Promise<Trickle> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const started = Date.now();
    let received = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => undefined); // a write after the server closed: the close says it all
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ received, closedAfterMs: Date.now() - started });
    });
    socket.on('connect', () => {
      timer = setInterval(() => {
        if (sent < text.length && !socket.destroyed) socket.write(text[sent++] as string);
      }, everyMs);
    });
    setTimeout(() => reject(new Error(`not closed after 20 s; received ${JSON.stringify(received)}`)), 20_000).unref();
  });
}

describe('slow clients', () => {
  it('have the production timeouts bounded (seconds, not minutes)', () => {
    expect(requestTimeouts.headersMs).toBeLessThanOrEqual(15_000);
    expect(requestTimeouts.requestMs).toBeLessThanOrEqual(60_000);
    expect(requestTimeouts.checkEveryMs).toBeLessThanOrEqual(2_000);
  });

  it('sending headers a byte at a time are answered 408 in the envelope and closed, all of them', async () => {
    const head = `GET /api/v1/auth/login-config HTTP/1.1\r\nHost: x\r\nX-Padding: ${'y'.repeat(200)}\r\n\r\n`;
    const clients = await Promise.all(Array.from({ length: 30 }, () => trickle(head, 100)));
    for (const client of clients) {
      // The headers' time, one check interval, and slack for a loaded machine.
      expect(client.closedAfterMs).toBeLessThan(timeouts.headersMs + timeouts.checkEveryMs + 3_000);
      expect(client.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(client.received).toMatch(/\r\nX-Request-Id: [0-9a-f-]{36}\r\n/);
      const body = client.received.slice(client.received.indexOf('\r\n\r\n') + 4);
      expect(JSON.parse(body)).toEqual({
        success: false,
        error: { code: 'REQUEST_TIMEOUT', message: 'The request was not received in time.', details: {} },
      });
    }
  });

  it('sending a body a byte at a time are answered 408 and closed', async () => {
    const body = JSON.stringify({ phoneCountryCode: '+1', phoneNumber: '5550000000' }).padEnd(200, ' ');
    const request = `POST /api/v1/auth/otp/request HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(request);
    const started = Date.now();
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => undefined);
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < body.length && !socket.destroyed) socket.write(body[sent++] as string);
    }, 100);
    await new Promise((resolve) => socket.once('close', resolve));
    clearInterval(timer);
    expect(Date.now() - started).toBeLessThan(timeouts.requestMs + timeouts.checkEveryMs + 3_000);
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('that send nothing at all are answered 408 and closed too', async () => {
    const socket = net.connect(port, '127.0.0.1');
    const started = Date.now();
    let received = '';
    // Read what the server sends: a socket whose answer is never read never ends.
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('close', resolve));
    expect(Date.now() - started).toBeLessThan(timeouts.headersMs + timeouts.checkEveryMs + 3_000);
    expect(received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  });
});

describe('a received request', () => {
  it('keeps an event stream open past both timeouts, and it still delivers', async () => {
    const user = await userAtLevel(app, 2);
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let received = '';
    let closed = false;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('close', () => (closed = true));
    socket.write(
      `GET /api/v1/notifications/stream HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${user.token}\r\n\r\n`,
    );
    await new Promise((resolve) => setTimeout(resolve, timeouts.requestMs + 3 * timeouts.checkEveryMs + 500));
    expect(closed).toBe(false);
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    // Still delivering: a follow makes a user_followed notification on this stream.
    const follower = await userAtLevel(app, 2);
    const before = received.length;
    expect((await app.post(`/users/${user.id}/follow`, undefined, { token: follower.token })).status).toBe(200);
    for (let i = 0; i < 50 && !received.slice(before).includes('user_followed'); i += 1)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(received.slice(before)).toContain('user_followed');
    expect(closed).toBe(false);
    socket.destroy();
  });
});
