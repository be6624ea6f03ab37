// One pino logger for the process. Request logs carry method, route, status, timing and ids only:
// never bodies, tokens, OTP codes or phone numbers (server/http/request-context.ts decides what goes in).
import pino from 'pino';
import { Logger as WorkerLogger } from 'graphile-worker';

export type Log = pino.Logger;

export function createLogger(level: string, destination?: pino.DestinationStream): Log {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'opinion-backend' },
    redact: {
      paths: ['*.authorization', '*.password', '*.accessToken', '*.refreshToken', '*.phoneNumber', '*.phoneE164'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** graphile-worker's logger interface, writing to the process logger. */
export function workerLogger(log: Log): WorkerLogger {
  return new WorkerLogger((scope) => (level, message, meta) => {
    const child = log.child({ worker: { ...scope } });
    const method = level === 'error' ? 'error' : level === 'warning' ? 'warn' : level === 'debug' ? 'debug' : 'info';
    child[method](meta ?? {}, message);
  });
}
