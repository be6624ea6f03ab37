// The web side of the links the app hands out, over HTTP: the logo and legal pages (shipped files,
// replaceable through WEB_DIR), the share page of a post (its public content, Open Graph tags,
// everything escaped; a private_locked_hub or deleted post answers as an unknown one does), the
// pages of invite URLs (the hub's invite preview only), and the app-link files from settings.
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../config.ts';
import { appLinkFiles } from '../../../server/web/app-links.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { addMember, createHub, invite } from '../../helpers/hubs.ts';
import { createPost, slider } from '../../helpers/posts.ts';
import { png, uploadAsset } from '../../helpers/uploads.ts';
import { userAtLevel, type TestUser } from '../../helpers/users.ts';
import { projectRoot } from '../../helpers/process.ts';

const hostile = `<script>alert("x")</script> & 'quoted' "text"`;
let app: TestApp;
let webDir: string;
let author: TestUser;

beforeAll(async () => {
  webDir = await mkdtemp(path.join(os.tmpdir(), 'opinion-web-'));
  await mkdir(path.join(webDir, 'legal'));
  await writeFile(path.join(webDir, 'legal', 'terms.html'), '<!doctype html><title>Our terms</title><p>The operator’s own terms.</p>');
  app = await startTestApp({
    WEB_DIR: webDir,
    IOS_APP_IDS: 'ABCDE12345.com.example.opinion',
    ANDROID_APP_PACKAGE: 'com.example.opinion',
    ANDROID_CERT_SHA256: '14:6d:e9:83:c5:73:06:50:d8:ee:b9:95:2f:34:fc:64:16:a0:83:42:e6:1d:be:a8:8a:04:96:b2:3f:cf:44:e5',
  });
  author = await userAtLevel(app, 4);
});
afterAll(async () => {
  await app.close();
  await rm(webDir, { recursive: true, force: true });
});

/** GET a page by the absolute URL the API handed out (PUBLIC_WEB_BASE_URL), from this server. */
async function open(url: string, headers: Record<string, string> = {}) {
  const { pathname } = new URL(url);
  expect(url.startsWith(app.config.publicWebBaseUrl), url).toBe(true);
  return fetch(`${app.url}${pathname}`, { headers, redirect: 'manual' });
}

const meta = (page: string, property: string) => new RegExp(`<meta (?:property|name)="${property}" content="([^"]*)">`).exec(page)?.[1];

describe('what login-config points at', () => {
  it('serves the logo and the legal pages: the shipped files, or the operator’s copy in WEB_DIR', async () => {
    const config = (await app.get('/auth/login-config')).body.data;
    const logo = await open(config.logoUrl);
    expect(logo.status).toBe(200);
    expect(logo.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await logo.arrayBuffer()).equals(await readFile(path.join(projectRoot, 'web/logo.png')))).toBe(true);
    const terms = await open(config.legal.termsUrl);
    expect(terms.status).toBe(200);
    expect(terms.headers.get('content-type')).toContain('text/html');
    expect(await terms.text()).toContain('The operator’s own terms.');
    const privacy = await open(config.legal.privacyUrl);
    expect(privacy.status).toBe(200);
    expect(await privacy.text()).toBe(await readFile(path.join(projectRoot, 'web/legal/privacy.html'), 'utf8'));
  });
});

describe('the share page of a post', () => {
  it('shows the public content with Open Graph tags, escapes everything, and offers the app', async () => {
    const post = await createPost(app, author, { ...slider, thoughtText: hostile });
    const link = (await app.get(`/posts/${post.id}/share-link`, { token: author.token })).body.data;
    const response = await open(link.url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await response.text();
    expect(page).not.toContain('<script>');
    expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quoted&#39; &quot;text&quot;');
    expect(meta(page, 'og:title')).toBe(slider.sliderText);
    expect(meta(page, 'og:description')).toBe('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quoted&#39; &quot;text&quot;');
    expect(meta(page, 'og:url')).toBe(link.url);
    expect(meta(page, 'og:image')).toBe(`${app.config.publicWebBaseUrl}/logo.png`);
    expect(page).toContain(`@${author.username}`);
    expect(page).toContain(slider.slider.leftLabel);
    expect(page).toContain(`href="${link.url}"`); // opens the app through its universal link
    // On Android the button is an intent for the configured app.
    const android = await (await open(link.url, { 'user-agent': 'Mozilla/5.0 (Linux; Android 15; Pixel 9)' })).text();
    expect(android).toContain(`href="intent://${new URL(link.url).host}/p/${post.id}#Intent;scheme=https;package=com.example.opinion;end"`);
  });

  it("shows the post's image through a link that always signs a fresh URL", async () => {
    const assetId = await uploadAsset(app, author, 'post_image');
    const post = await createPost(app, author, { article: { kind: 'media', title: 'A picture', assetIds: [assetId] } });
    const url = `${app.config.publicWebBaseUrl}/p/${post.id}`;
    const page = await (await open(url)).text();
    expect(meta(page, 'og:image')).toBe(`${url}/image`);
    const image = await open(`${url}/image`);
    expect(image.status).toBe(302);
    // The image's JPEG variant (what every link-preview crawler shows), never the uploaded file.
    const stored = await fetch(image.headers.get('location') as string);
    expect(stored.headers.get('content-type')).toBe('image/jpeg');
    const bytes = Buffer.from(await stored.arrayBuffer());
    expect(bytes.subarray(0, 3)).toEqual(Buffer.from('ffd8ff', 'hex'));
    expect(bytes.equals(png)).toBe(false);
  });

  it('answers a private_locked_hub post, a deleted post and an unknown id with the same page', async () => {
    const hub = await createHub(app, author);
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    const locked = await createPost(app, author, {
      thoughtText: 'Members only: the secret plan',
      visibility: 'private_locked_hub',
      hubIds: [hub.id],
    });
    const deleted = await createPost(app, author, { thoughtText: 'Soon gone' });
    expect((await app.delete(`/posts/${deleted.id}`, { token: author.token })).status).toBe(200);
    const base = app.config.publicWebBaseUrl;
    const unknown = await open(`${base}/p/7b0e1c3a-4f1e-4c55-9a57-2f5d1a8e6b90`);
    expect(unknown.status).toBe(404);
    const expected = await unknown.text();
    expect(expected).toContain('This post is not available');
    for (const id of [locked.id, deleted.id, 'not-a-uuid']) {
      const response = await open(`${base}/p/${id}`);
      expect(response.status, id).toBe(404);
      expect(await response.text(), id).toBe(expected);
      expect((await open(`${base}/p/${id}/image`)).status).toBe(404);
    }
  });
});

describe('the pages of invite URLs', () => {
  it("show the hub's invite preview only, escaped, for a usable invite link", async () => {
    const hub = await createHub(app, author, { description: hostile });
    const member = await userAtLevel(app, 4);
    await addMember(app, hub, member);
    const link = (await app.post(`/hubs/${hub.id}/invite-links`, undefined, { token: author.token })).body.data;
    const response = await open(link.url);
    expect(response.status).toBe(200);
    const page = await response.text();
    const name = (await app.owner.query('select name from app.hubs where id = $1', [hub.id])).rows[0].name;
    expect(page).toContain(`Join ${name} on Opinion`);
    expect(page).toContain('2 members');
    expect(page).not.toContain('<script>');
    expect(page).toContain('&lt;script&gt;');
    for (const secret of [member.username, author.username, member.phone?.phoneNumber]) expect(page).not.toContain(secret);
    const unknownLink = await open(`${app.config.publicWebBaseUrl}/hub-invite-links/no-such-token`);
    expect(unknownLink.status).toBe(404);
    await app.owner.query(`update app.hub_invite_links set expires_at = now() - interval '1 second' where token = $1`, [link.token]);
    const expired = await open(link.url);
    expect(expired.status).toBe(404);
    expect(await expired.text()).toBe(await unknownLink.text());
  });

  it('show the preview of a pending invitation, never its phone, and nothing once it is answered', async () => {
    const hub = await createHub(app, author);
    const invitee = await userAtLevel(app, 4);
    const invitationId = await invite(app, hub, author, invitee);
    const invitations = (await app.get(`/hubs/${hub.id}/invitations`, { token: author.token })).body.data.items;
    const masked = invitations.find((item: { id: string }) => item.id === invitationId).maskedPhoneNumber;
    const url = `${app.config.publicWebBaseUrl}/hub-invitations/${invitationId}`;
    const page = await (await open(url)).text();
    expect(page).toContain('1 member');
    for (const secret of [invitee.phone?.phoneNumber, masked, invitee.username]) expect(page).not.toContain(secret);
    expect((await app.post(`/hub-invitations/${invitationId}/accept`, undefined, { token: invitee.token })).status).toBe(200);
    const answered = await open(url);
    expect(answered.status).toBe(404);
    const unknown = await open(`${app.config.publicWebBaseUrl}/hub-invitations/7b0e1c3a-4f1e-4c55-9a57-2f5d1a8e6b90`);
    expect(await answered.text()).toBe(await unknown.text());
  });

  it('read as the anonymous role: the preview functions answer nothing more to it', async () => {
    const { rows } = await app.owner.query(
      `select p.proname, has_function_privilege('app_anonymous', p.oid, 'execute') as allowed
       from pg_proc p where p.pronamespace = 'app'::regnamespace and p.proname in ('invite_link_preview', 'invitation_preview') order by 1`,
    );
    expect(rows).toEqual([
      { proname: 'invitation_preview', allowed: true },
      { proname: 'invite_link_preview', allowed: true },
    ]);
  });
});

describe('app-link files', () => {
  it('serve apple-app-site-association and assetlinks.json from the settings, as JSON', async () => {
    const apple = await fetch(`${app.url}/.well-known/apple-app-site-association`, { redirect: 'manual' });
    expect(apple.status).toBe(200);
    expect(apple.headers.get('content-type')).toContain('application/json');
    const association = await apple.json();
    expect(association.applinks.details[0]).toEqual({
      appIDs: ['ABCDE12345.com.example.opinion'],
      components: [{ '/': '/p/*' }, { '/': '/hub-invite-links/*' }, { '/': '/hub-invitations/*' }],
    });
    const android = await fetch(`${app.url}/.well-known/assetlinks.json`);
    expect(android.headers.get('content-type')).toContain('application/json');
    expect(await android.json()).toEqual([
      {
        relation: ['delegate_permission/common.handle_all_urls'],
        target: {
          namespace: 'android_app',
          package_name: 'com.example.opinion',
          sha256_cert_fingerprints: ['14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5'],
        },
      },
    ]);
  });

  it('answer 404 without settings, and refuse settings that cannot be right', async () => {
    const bare = express().use(appLinkFiles(loadConfig({ JWT_SECRET: 'x', DATA_DIR: webDir })));
    const server = bare.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (const file of ['apple-app-site-association', 'assetlinks.json'])
      expect((await fetch(`${base}/.well-known/${file}`)).status).toBe(404);
    server.close();
    expect(() => loadConfig({ JWT_SECRET: 'x', IOS_APP_IDS: 'com.example.opinion' })).toThrow(/^IOS_APP_IDS must list/);
    expect(() => loadConfig({ JWT_SECRET: 'x', ANDROID_APP_PACKAGE: 'com.example.opinion' })).toThrow(/go together/);
    expect(() => loadConfig({ JWT_SECRET: 'x', ANDROID_APP_PACKAGE: 'com.example.opinion', ANDROID_CERT_SHA256: 'AB:CD' })).toThrow(
      /^ANDROID_CERT_SHA256 must list/,
    );
  });
});
