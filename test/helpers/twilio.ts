// A stand-in for Twilio's Messages API on loopback, speaking its wire format: a form-encoded
// `POST /2010-04-01/Accounts/{AccountSid}/Messages.json` with HTTP basic auth (account SID and auth
// token) answers 201 and a message resource; a wrong SID or token answers 401 with error 20003; a
// recipient the test marked answers Twilio's error JSON for it (`{ code, message, more_info,
// status }`). It records every request it got.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TwilioRequest {
  method: string;
  path: string;
  contentType: string | undefined;
  /** The basic-auth pair, decoded ("sid:token"). */
  credentials: string | undefined;
  form: Record<string, string>;
}

export interface TwilioStandIn {
  url: string;
  accountSid: string;
  authToken: string;
  requests: TwilioRequest[];
  /** From now on, messages to this number get this HTTP status and Twilio error code. */
  fail(to: string, status: number, code: number, message: string): void;
  close(): Promise<void>;
}

export async function startTwilioStandIn(): Promise<TwilioStandIn> {
  const accountSid = `AC${randomBytes(16).toString('hex')}`;
  const authToken = randomBytes(16).toString('hex');
  const requests: TwilioRequest[] = [];
  const failures = new Map<string, { status: number; code: number; message: string }>();
  const answer = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const error = (res: http.ServerResponse, status: number, code: number, message: string) =>
    answer(res, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const authorization = req.headers.authorization ?? '';
      const credentials = authorization.startsWith('Basic ') ? Buffer.from(authorization.slice(6), 'base64').toString() : undefined;
      const form = Object.fromEntries(new URLSearchParams(body));
      const path = req.url ?? '';
      requests.push({ method: req.method ?? '', path, contentType: req.headers['content-type'], credentials, form });
      const match = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(path);
      if (req.method !== 'POST' || !match) return error(res, 404, 20404, 'The requested resource was not found');
      if (credentials !== `${accountSid}:${authToken}` || match[1] !== accountSid) return error(res, 401, 20003, 'Authenticate');
      if (!form.To || !(form.From || form.MessagingServiceSid) || !form.Body)
        return error(res, 400, 21604, "A 'To' phone number is required.");
      const failure = failures.get(form.To);
      if (failure) return error(res, failure.status, failure.code, failure.message);
      const sid = `SM${randomBytes(16).toString('hex')}`;
      answer(res, 201, {
        sid,
        account_sid: accountSid,
        to: form.To,
        from: form.From,
        body: form.Body,
        status: 'queued',
        uri: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}.json`,
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    accountSid,
    authToken,
    requests,
    fail: (to, status, code, message) => void failures.set(to, { status, code, message }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
