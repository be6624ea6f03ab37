import { defineConfig } from 'vitest/config';

/**
 * HTTP test files that also run with the API and GraphQL pools behind a real PgBouncer in
 * transaction mode (test/helpers/app.ts, TEST_THROUGH_POOLER): the main journeys, chosen to cost
 * little time (about 40 s of a worker's time). test/http/pooler.test.ts always runs through one
 * (votes, the stream, uploads, hubs, GraphQL, a pooler restart).
 * `npx vitest run --project direct <file>` runs a file once.
 */
const throughPooler = [
  'test/http/auth.test.ts',
  'test/http/onboarding.test.ts',
  'test/http/profiles.test.ts',
  'test/http/posts.test.ts',
  'test/http/comments.test.ts',
  'test/http/notifications.test.ts',
  'test/http/write-limits.test.ts',
];

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
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
