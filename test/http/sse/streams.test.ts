// The streams of one process (server/sse/streams.ts) over a real socket: a stream is registered
// before it answers, holds what arrives meanwhile, and answers 200 only when its request begins it
// (GET /notifications/stream begins it after checking the session again; a stream closed before
// that leaves the answer to the request).
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response } from 'express';
import { afterEach, expect, it } from 'vitest';
import { SseStreams, type SseStream } from '../../../server/sse/streams.ts';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A server whose one request registers a stream and hands it to `setUp` (run while the request waits). */
async function serve(setUp: (stream: SseStream, res: ServerResponse) => Promise<void>): Promise<string> {
  const streams = new SseStreams({ pingSeconds: 60, maxSeconds: 60 });
  server = createServer((_req, res) => {
    const stream = streams.open(res as unknown as Response, { userId: 'u', sessionId: 's' });
    void setUp(stream, res);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server?.address() as AddressInfo).port}/`;
}

const event = (id: string) => ({ id, event: 'notification', data: { id } });

it('answers nothing until the stream begins, then 200 and the events held since its registration', async () => {
  let answered = false;
  let begin = () => {};
  const url = await serve(async (stream) => {
    stream.send(event('a'));
    await new Promise<void>((resolve) => (begin = resolve));
    stream.send(event('b'));
    stream.begin(false);
    stream.send(event('c'));
    stream.close();
  });
  const response = fetch(url).then((answer) => {
    answered = true;
    return answer;
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(answered).toBe(false);
  begin();
  const answer = await response;
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toBe('text/event-stream');
  const ids = [...(await answer.text()).matchAll(/^id: (.*)$/gm)].map((match) => match[1]);
  expect(ids).toEqual(['a', 'b', 'c']);
});

it('leaves the answer to the request when the stream is closed before it begins', async () => {
  const url = await serve(async (stream, res) => {
    stream.send(event('a'));
    stream.close();
    expect(stream.closed).toBe(true);
    stream.begin(false);
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"refused":true}');
  });
  const answer = await fetch(url);
  expect(answer.status).toBe(401);
  expect(await answer.json()).toEqual({ refused: true });
});

it('with hold, keeps live events behind the replay until the release', async () => {
  const url = await serve(async (stream) => {
    stream.begin(true);
    stream.send(event('live'));
    stream.release([event('replayed')], 'replay truncated', undefined);
    stream.close();
  });
  const body = await (await fetch(url)).text();
  expect(body.split('\n\n').filter(Boolean)).toEqual([
    'id: replayed\nevent: notification\ndata: {"id":"replayed"}',
    ': replay truncated',
    'id: live\nevent: notification\ndata: {"id":"live"}',
  ]);
});
