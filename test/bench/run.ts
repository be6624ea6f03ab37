// npm run bench [name]: runs one benchmark of test/bench. No name runs the vote benchmark.
const benchmarks: Record<string, string> = {
  votes: './votes.ts',
  'vote-profile': './vote-profile.ts',
  'vote-trip': './vote-trip.ts',
  feeds: './feeds.ts',
  live: './live.ts',
  scale: './scale.ts',
  'scale-out': './scale-out.ts',
  push: './push.ts',
  // The replica half of scale-out (test/bench/scale-out.ts calls it too).
  'scale-out-replicas': './scale-out-replicas.ts',
  // Which server runs the transactions of a read-mostly load with one replica.
  'replica-share': './replica-share.ts',
  idempotency: './idempotency.ts',
  deploy: './deploy.ts',
  media: './media.ts',
  failover: './failover.ts',
};
const name = process.argv[2] ?? 'votes';
const module = benchmarks[name];
if (!module) throw new Error(`unknown benchmark "${name}" (known: ${Object.keys(benchmarks).join(', ')})`);
await import(module);
