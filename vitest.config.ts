import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Node's module compile cache (V8 code cache on disk, keyed by each file's content) for every
 * process of the run: the test workers, their GraphQL threads, and the service and CLI processes the
 * tests start (they inherit the environment). Each of those otherwise compiles the same modules
 * again: an API process's start took 2.1 s of CPU without it and 1.5 s with it, the admin CLI's
 * 0.4 s and 0.16 s. Set before the workers are forked; an operator's NODE_COMPILE_CACHE wins.
 */
process.env.NODE_COMPILE_CACHE ??= path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules', '.cache', 'node-compile-cache');

/**
 * HTTP test files that also run with the API and GraphQL pools behind a real PgBouncer in
 * transaction mode (test/helpers/app.ts, TEST_THROUGH_POOLER): the main journeys, chosen to cost
 * little time (about 40 s of a worker's time). test/http/operations/pooler.test.ts always runs through one
 * (votes, the stream, uploads, hubs, GraphQL, a pooler restart).
 * `npx vitest run --project direct <file>` runs a file once.
 */
const throughPooler = [
  'test/http/auth/auth.test.ts',
  'test/http/onboarding/onboarding.test.ts',
  'test/http/users/profiles.test.ts',
  'test/http/posts/posts.test.ts',
  'test/http/comments/comments.test.ts',
  'test/http/notifications/notifications.test.ts',
  'test/http/http/write-limits.test.ts',
];

/**
 * The files that take longest (a Patroni cluster's faults, a restore drill, process restarts, image
 * decoding), started first in this order: a run then never ends waiting on one of them started
 * last. Vitest orders by the last run's durations when it has them (node_modules/.vite), by file
 * size on a fresh clone, where a short file that waits a minute would otherwise start at the end.
 */
const startFirst = [
  'test/process/operations/failover.test.ts',
  'test/process/operations/restore-drill.test.ts',
  'test/http/operations/pooler.test.ts',
  'test/worker/uploads/processor.test.ts',
  'test/http/push/push.test.ts',
  'test/process/operations/failures.test.ts',
  'test/process/worker/worker-liveness.test.ts',
  'test/process/operations/seed.test.ts',
  'test/process/operations/replica-reads.test.ts',
  'test/process/operations/previous-release.test.ts',
  'test/sql/database/migration-locks.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const index = startFirst.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return index < 0 ? startFirst.length : index;
    };
    const sorted = await super.sort(files);
    return sorted
      .map((spec, order) => ({ spec, order }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.order - b.order)
      .map(({ spec }) => spec);
  }
}

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
    // A worker process runs file after file without loading the app's modules again for each
    // (about a second of every file's time); each file still has its own database and app.
    isolate: false,
    sequence: { sequencer: LongestFirst },
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { NODE_ENV: 'test' },
    projects: [
      { extends: true, test: { name: 'direct', include: ['test/**/*.test.ts'] } },
      { extends: true, test: { name: 'pooler', include: throughPooler, env: { NODE_ENV: 'test', TEST_THROUGH_POOLER: '1' } } },
    ],
  },
});
