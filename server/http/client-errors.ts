// Requests that Node's HTTP parser refuses before Express sees them: a URL or headers beyond the
// server's limit (431 HEADERS_TOO_LARGE), bytes that are not HTTP (400 MALFORMED_REQUEST), or a
// request not received within the server's time (408 REQUEST_TIMEOUT: server/app.ts
// requestTimeouts). They still get the error envelope and an X-Request-Id (a new one: the request's
// own headers were not read), and one log line like every other request.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Log } from '../../logger.ts';
import { errorCatalog, type ErrorCode } from './catalog.ts';

export function answerClientErrors(server: Server, log: Log): Server {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A client that went away gets nothing more.
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const code: ErrorCode =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'HEADERS_TOO_LARGE'
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 'REQUEST_TIMEOUT'
          : 'MALFORMED_REQUEST';
    const [status, message] = errorCatalog[code];
    const requestId = randomUUID();
    const body = JSON.stringify({ success: false, error: { code, message, details: {} } });
    log.info({ requestId, route: '(unparsed)', status }, 'request');
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
      // Closed both ways once the answer is written: a client still sending (a byte a second) would
      // otherwise keep its half of the socket open.
      () => socket.destroy(),
    );
  });
  return server;
}
