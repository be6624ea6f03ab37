// The longest text each kind of field holds, one number per kind. The request rules use them (a
// longer value is 422), the database's check constraints hold the same numbers (a row never holds
// more), and the response shapes state them with `text()`, so a response's maxLength in the
// OpenAPI document is one the data cannot exceed.
import { z } from 'zod';

export const textMax = {
  handle: 30,
  /** A full name, a Hub display name. */
  name: 80,
  bio: 160,
  hubName: 60,
  hubDescription: 1000,
  customLink: 40,
  thought: 2000,
  sliderText: 260,
  sliderLabel: 40,
  articleTitle: 300,
  articleText: 10000,
  articleUrl: 2048,
  comment: 1000,
  discussionMessage: 2000,
  /** E.164: a + and at most 15 digits (a masked number keeps the length). */
  phone: 16,
  /**
   * A URL this server makes: a link under PUBLIC_WEB_BASE_URL or a signed object-store URL (about
   * 1 KB with a session token's signature).
   */
  url: 4096,
  /** A share sheet's text: a sentence, a hub name and a URL. */
  shareText: 4096 + 200,
  /** A session's tokens: a JWT of five claims, a refresh token (rt_ and 43 characters). */
  token: 1024,
  contentType: 100,
} as const;

/** A response string of at most `max` characters (the OpenAPI document's maxLength; see above for why it holds). */
export const text = (max: number) => z.string().meta({ maxLength: max });

/** The same, or null (stated on the nullable type, as `type: [string, null]` with its maxLength). */
export const nullableText = (max: number) => z.string().nullable().meta({ maxLength: max });
