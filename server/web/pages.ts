// The web side of the links the app hands out (contract parts 3, 7 and 8), outside /api/v1:
//   GET /logo.png, /legal/terms, /legal/privacy   what login-config's logoUrl, termsUrl and
//       privacyUrl point at: files shipped in web/, each replaceable by a file of the same name in
//       WEB_DIR;
//   GET /p/{postId}                 the share link's page: the post's public content with Open
//       Graph tags for link previews, and a way into the app; GET /p/{postId}/image its image;
//   GET /hub-invite-links/{token}, /hub-invitations/{invitationId}   an invite URL's page: the
//       hub's invite preview only.
// Pages read the database as a request without a token does (app_anonymous, under the same
// row-level security and functions as the API): a post the anonymous role may not see (a
// private_locked_hub post, a deleted one, an author's post hidden by policy) answers exactly as an
// unknown id does. Everything put in a page is escaped (html.ts). The app-link files are in
// app-links.ts.
import { existsSync } from 'node:fs';
import path from 'node:path';
import express from 'express';
import type { Request, Response } from 'express';
import { RequestTransaction } from '../../db/request-transaction.ts';
import { anonymousViewer } from '../../db/viewer.ts';
import type { Config } from '../../config.ts';
import { isUuid } from '../http/ids.ts';
import { readCard, type PostCard } from '../posts/card.ts';
import type { Services } from '../services.ts';
import { html, type Html } from './html.ts';

/** The files shipped with the service (web/ at the root of the checkout or image). */
const shippedDir = path.resolve(import.meta.dirname, '../../web');
const siteName = 'Opinion';
const previewLength = 200;

/** The replaceable files: the operator's copy in WEB_DIR when there is one, else the shipped one. */
function webFile(config: Config, name: string): string {
  const own = config.web.dir === undefined ? undefined : path.join(config.web.dir, name);
  return own !== undefined && existsSync(own) ? own : path.join(shippedDir, name);
}

function clip(text: string, length = previewLength): string {
  return text.length <= length ? text : `${text.slice(0, length - 1).trimEnd()}…`;
}

interface PageMeta {
  title: string;
  description: string;
  url: string;
  image: string;
  type: 'article' | 'website';
}

function page(config: Config, meta: PageMeta, body: Html, appUrl: string): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${meta.title}</title>
<meta name="description" content="${meta.description}">
<meta property="og:site_name" content="${siteName}">
<meta property="og:type" content="${meta.type}">
<meta property="og:title" content="${meta.title}">
<meta property="og:description" content="${meta.description}">
<meta property="og:url" content="${meta.url}">
<meta property="og:image" content="${meta.image}">
<meta name="twitter:card" content="summary">
<link rel="canonical" href="${meta.url}">
<link rel="icon" href="${config.publicWebBaseUrl}/logo.png">
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:0 auto;padding:1.5rem 1rem;color:#1b1f24;background:#f5f7fa}
main{background:#fff;border-radius:12px;padding:1.25rem;box-shadow:0 1px 3px #0002}
header{display:flex;align-items:center;gap:.75rem;margin-bottom:1rem}
header img{width:48px;height:48px;border-radius:50%;object-fit:cover}
.name{font-weight:600}.handle,.meta{color:#5b6572;font-size:.9rem}
.media{max-width:100%;border-radius:8px;margin:.5rem 0}
blockquote{border-left:3px solid #c9d3df;margin:.75rem 0;padding:.25rem .75rem;color:#38414c}
.slider{margin:1rem 0;padding:.75rem;background:#eef3f9;border-radius:8px}
.labels{display:flex;justify-content:space-between;font-size:.9rem;color:#38414c}
.open{display:block;text-align:center;margin-top:1.25rem;padding:.75rem;border-radius:8px;background:#1f4e8c;color:#fff;text-decoration:none;font-weight:600}
footer{text-align:center;margin-top:1rem;font-size:.85rem}footer a{color:#5b6572}
</style>
</head>
<body>
<main>
${body}
<a class="open" href="${appUrl}">Open in the ${siteName} app</a>
</main>
<footer><a href="${config.publicWebBaseUrl}/legal/terms">Terms</a> · <a href="${config.publicWebBaseUrl}/legal/privacy">Privacy</a></footer>
</body>
</html>
`.text;
}

/**
 * The link that opens the app from the page itself: on Android an intent for the configured app
 * (Chrome opens the Play Store listing when it is missing); elsewhere the page's own URL, which
 * iOS opens in the app when the link is tapped in another app (apple-app-site-association).
 */
function appLink(config: Config, req: Request, url: string): string {
  if (config.web.android && /Android/i.test(req.get('user-agent') ?? '')) {
    const target = new URL(url);
    return `intent://${target.host}${target.pathname}#Intent;scheme=${target.protocol.replace(':', '')};package=${config.web.android.package};end`;
  }
  return url;
}

function send(res: Response, status: number, body: string): void {
  res
    .status(status)
    .set({
      'Content-Type': 'text/html; charset=utf-8',
      // Nothing runs on these pages; images may come from the object store.
      'Content-Security-Policy':
        "default-src 'none'; img-src https: http: data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      // A post deleted or made unreachable must not outlive its removal in a cache.
      'Cache-Control': 'no-store',
    })
    .send(body);
}

/** The one answer for anything that is not there or not for this viewer. */
function notAvailable(config: Config, res: Response, what: 'post' | 'invitation'): void {
  const title = what === 'post' ? 'This post is not available' : 'This invitation is not available';
  const body = html`<h1>${title}</h1><p>It may have been removed, it may have expired, or it may be visible only to some people in the app.</p>`;
  // Nothing of the request (not even its path) is in the answer: an unknown id and a hidden one read the same.
  const url = `${config.publicWebBaseUrl}/`;
  send(
    res,
    404,
    page(config, { title, description: title, url, image: `${config.publicWebBaseUrl}/logo.png`, type: 'website' }, body, url),
  );
}

function postBody(card: PostCard, imagePath: string | undefined): Html {
  const { author } = card;
  const frame = (post: Pick<PostCard, 'article' | 'thoughtText' | 'sliderText' | 'slider'>, image: string | undefined): Html => html`
${post.thoughtText ? html`<p>${post.thoughtText}</p>` : ''}
${
  post.article
    ? html`<div class="article">
${post.article.title ? html`<p><strong>${post.article.url ? html`<a href="${post.article.url}" rel="nofollow noopener">${post.article.title}</a>` : post.article.title}</strong></p>` : ''}
${post.article.text ? html`<p>${post.article.text}</p>` : ''}
${image ? html`<img class="media" src="${image}" alt="">` : ''}
</div>`
    : ''
}
${
  post.sliderText && post.slider
    ? html`<div class="slider"><p><strong>${post.sliderText}</strong></p><div class="labels"><span>${post.slider.leftLabel}</span><span>${post.slider.rightLabel}</span></div><p class="meta">Vote in the app: positions stay anonymous.</p></div>`
    : ''
}`;
  return html`<header>
${author.profilePhotoUrl ? html`<img src="${author.profilePhotoUrl}" alt="">` : ''}
<div><div class="name">${author.fullName ?? author.username ?? ''}</div>${author.username ? html`<div class="handle">@${author.username}</div>` : ''}</div>
</header>
${frame(card, imagePath)}
${card.sourcePost ? html`<blockquote>${frame(card.sourcePost, undefined)}</blockquote>` : ''}
<p class="meta"><time datetime="${card.createdAt}">${card.createdAt.slice(0, 10)}</time></p>`;
}

/**
 * The first image of a post's article, as a signed URL of its JPEG variant (what every link-preview
 * crawler can show), or undefined. An image not processed yet has only its url.
 */
function firstImage(card: PostCard): string | undefined {
  const item = card.article?.media.find((medium) => medium.url !== null);
  return item?.variants.find((variant) => variant.contentType === 'image/jpeg')?.url ?? item?.url ?? undefined;
}

async function anonymousRead<T>(services: Services, read: (tx: RequestTransaction) => Promise<T>): Promise<T> {
  const tx = new RequestTransaction(services.pools.api, anonymousViewer, services.config.apiTimeouts);
  try {
    const result = await read(tx);
    await tx.finish(true);
    return result;
  } catch (error) {
    await tx.finish(false).catch(() => undefined);
    throw error;
  }
}

interface HubPreview {
  hub_id: string;
  name: string;
  description: string;
  photo_key: string | null;
  member_count: number;
}

/** A preview function's error for a link that is unknown or past expiry (P0001, contract section 8). */
const unusableLink = (error: unknown) => (error as { code?: string }).code === 'P0001';

export function webPages(services: Services): express.Router {
  const { config, storage } = services;
  const router = express.Router();
  const files: [string, string][] = [
    ['/logo.png', 'logo.png'],
    ['/legal/terms', 'legal/terms.html'],
    ['/legal/privacy', 'legal/privacy.html'],
  ];
  for (const [route, name] of files) {
    router.get(route, (_req, res, next) => {
      res.sendFile(
        webFile(config, name),
        { maxAge: '1h', headers: { 'X-Content-Type-Options': 'nosniff' } },
        (error) => error && next(error),
      );
    });
  }

  router.get('/p/:postId', async (req, res, next) => {
    try {
      const postId = req.params.postId;
      const card = isUuid(postId) ? await anonymousRead(services, (tx) => readCard(tx, services, postId)) : undefined;
      if (!card) return notAvailable(config, res, 'post');
      const url = `${config.publicWebBaseUrl}/p/${card.id}`;
      const image = firstImage(card);
      const handle = card.author.username ? `@${card.author.username}` : (card.author.fullName ?? siteName);
      const title = card.sliderText ?? card.article?.title ?? `A post by ${handle}`;
      const description = clip(card.thoughtText ?? card.article?.text ?? card.sourcePost?.thoughtText ?? `${handle} on ${siteName}`);
      const meta: PageMeta = {
        title,
        description,
        url,
        image: image ? `${url}/image` : `${config.publicWebBaseUrl}/logo.png`,
        type: 'article',
      };
      send(res, 200, page(config, meta, postBody(card, image ? `${url}/image` : undefined), appLink(config, req, url)));
    } catch (error) {
      next(error);
    }
  });

  router.get('/p/:postId/image', async (req, res, next) => {
    try {
      const postId = req.params.postId;
      const card = isUuid(postId) ? await anonymousRead(services, (tx) => readCard(tx, services, postId)) : undefined;
      const image = card ? firstImage(card) : undefined;
      if (!image) return notAvailable(config, res, 'post');
      // A fresh signed URL each time: the link in the page (and in a preview's cache) keeps working.
      res.set('Cache-Control', 'no-store').redirect(302, image);
    } catch (error) {
      next(error);
    }
  });

  const invitePage =
    (what: string, read: (req: Request, tx: RequestTransaction) => Promise<HubPreview | undefined>) =>
    async (req: Request, res: Response, next: express.NextFunction) => {
      try {
        const hub = await anonymousRead(services, (tx) => read(req, tx)).catch((error: unknown) => {
          if (unusableLink(error)) return undefined;
          throw error;
        });
        if (!hub) return notAvailable(config, res, 'invitation');
        const url = `${config.publicWebBaseUrl}${req.path}`;
        const photo = await storage.photoUrl(hub.photo_key);
        const title = `Join ${hub.name} on ${siteName}`;
        const members = `${hub.member_count} ${hub.member_count === 1 ? 'member' : 'members'}`;
        const body = html`<header>
${photo ? html`<img src="${photo}" alt="">` : ''}
<div><div class="name">${hub.name}</div><div class="meta">${members}</div></div>
</header>
${hub.description ? html`<p>${hub.description}</p>` : ''}
<p class="meta">${what}</p>`;
        const meta: PageMeta = {
          title,
          description: clip(hub.description || members),
          url,
          image: `${config.publicWebBaseUrl}/logo.png`,
          type: 'website',
        };
        send(res, 200, page(config, meta, body, appLink(config, req, url)));
      } catch (error) {
        next(error);
      }
    };

  router.get(
    '/hub-invite-links/:token',
    invitePage('Open this link in the app to ask to join: an admin of the hub approves requests.', async (req, tx) => {
      const token = String(req.params.token);
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(token)) return undefined;
      const { rows } = await tx.query<HubPreview>(
        'select hub_id, name, description, photo_key, member_count from app.invite_link_preview($1)',
        [token],
      );
      return rows[0];
    }),
  );
  router.get(
    '/hub-invitations/:invitationId',
    invitePage('Open this invitation in the app, signed in with the phone number it was sent to, to accept it.', async (req, tx) => {
      const invitationId = String(req.params.invitationId);
      if (!isUuid(invitationId)) return undefined;
      const { rows } = await tx.query<HubPreview>(
        'select hub_id, name, description, photo_key, member_count from app.invitation_preview($1)',
        [invitationId],
      );
      return rows[0];
    }),
  );
  return router;
}
