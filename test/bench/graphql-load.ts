// The attacking process of the GraphQL benchmark (test/bench/graphql-abuse.ts), started once and
// warmed up before anything is timed, so the timing never includes a process starting: for each
// job ({ query, durationMs }) it sends `lanes` requests of the query at once (each lane its next one
// as soon as the last answered, until durationMs passed; 0: one each) and answers with every
// request's time, status and size. Usage: fork with [base, token, lanes].
const [base, token, lanes = '8'] = process.argv.slice(2) as [string, string, string?];

export interface Answer {
  ms: number;
  status: number;
  bytes: number;
}

async function one(query: string): Promise<Answer> {
  const started = performance.now();
  const send = () =>
    fetch(`${base}/internal/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query }),
    });
  // A kept-alive socket the server closed just as it was reused resets: the client's race.
  const response = await send().catch((error: { cause?: { code?: string } }) => {
    if (error.cause?.code !== 'ECONNRESET') throw error;
    return send();
  });
  const text = await response.text();
  return { ms: performance.now() - started, status: response.status, bytes: text.length };
}

async function run(query: string, durationMs: number): Promise<Answer[]> {
  const until = performance.now() + durationMs;
  const answers = await Promise.all(
    Array.from({ length: Number(lanes) }, async () => {
      const times: Answer[] = [];
      do times.push(await one(query));
      while (performance.now() < until);
      return times;
    }),
  );
  return answers.flat();
}

// Warm: the HTTP client, its connections, this code's JIT.
for (let i = 0; i < 20; i++) await run('{ __typename }', 0);
process.send?.('ready');
process.on('message', (job: { query: string; durationMs: number }) => {
  run(job.query, job.durationMs).then(
    (answers) => process.send?.(answers),
    (error: unknown) => {
      process.stderr.write(`${String(error)}\n`);
      process.exit(1);
    },
  );
});
process.on('disconnect', () => process.exit(0));
