// The docs page in a real browser (headless Chromium driven by playwright-core): at /api/v1/docs
// and /api/v1/docs/ it renders the operations from the inlined document, loading nothing from any
// other host (no CDN). The browser comes from npm (@sparticuz/chromium: a Chromium build inside
// the package, unpacked to the temporary directory on first use), so `npm ci && npm test` is all a
// machine needs; CHROMIUM_PATH points the test at another build.
import sparticuz from '@sparticuz/chromium';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.ts';

let app: TestApp;
let browser: Browser;
beforeAll(async () => {
  app = await startTestApp();
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? (await sparticuz.executablePath()),
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('the docs page in headless Chromium', () => {
  for (const path of ['/api/v1/docs', '/api/v1/docs/']) {
    it(`renders operations at ${path}, offline`, { timeout: 60_000 }, async () => {
      const page = await browser.newPage();
      const elsewhere: string[] = [];
      page.on('request', (request) => {
        if (!request.url().startsWith(app.url) && !request.url().startsWith('data:')) elsewhere.push(request.url());
      });
      await page.goto(`${app.url}${path}`);
      const operation = page.locator('.opblock-summary-path', { hasText: '/posts/{postId}/vote' }).first();
      await operation.waitFor({ timeout: 40_000 });
      expect(await page.locator('.opblock').count()).toBeGreaterThan(50);
      // A named component schema is listed in the schemas section.
      await page.locator('.models .json-schema-2020-12__title', { hasText: 'PostCard' }).first().waitFor({ timeout: 20_000 });
      expect(elsewhere).toEqual([]);
      await page.close();
    });
  }
});
