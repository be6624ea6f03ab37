// Post request fields (spec 2.3; contract section 7).
import { z } from 'zod';
import { idField } from '../http/ids.ts';
import { textMax } from '../http/text.ts';

export const idList = (max: number) => z.array(idField).max(max);

/** The most hubs a post goes to at once, and the most media of an article. */
export const postHubsMax = 10;
export const articleMediaMax = 10;

/** The enum app.post_visibility (test/sql/database/enums.test.ts holds them equal). */
export const visibilities = ['public', 'public_hub', 'private_locked_hub'] as const;
export type Visibility = (typeof visibilities)[number];
export const visibility = z.enum(visibilities);

/** The enum app.article_kind. */
export const articleKinds = ['link', 'media', 'text'] as const;
export type ArticleKind = (typeof articleKinds)[number];

export const frameFields = {
  thoughtText: z.string().min(1).max(textMax.thought).optional(),
  sliderText: z.string().min(1).max(textMax.sliderText).optional(),
  slider: z
    .strictObject({ leftLabel: z.string().min(1).max(textMax.sliderLabel), rightLabel: z.string().min(1).max(textMax.sliderLabel) })
    .optional(),
  hubIds: idList(postHubsMax).optional(),
};

interface FrameInput {
  sliderText?: string | undefined;
  slider?: unknown;
  visibility?: string | undefined;
  hubIds?: string[] | undefined;
}

/** JSON Schema: these properties are present (each named in `properties` too, as linters expect). */
export function requires(...names: string[]) {
  return { required: names, properties: Object.fromEntries(names.map((name) => [name, {}])) };
}

/** checkFrame's rules in JSON Schema, for the OpenAPI document (zod .meta of the bodies using it). */
export const frameRules = {
  dependentRequired: { slider: ['sliderText'], sliderText: ['slider'] },
  allOf: [
    {
      if: { required: ['visibility'], properties: { visibility: { const: 'public' } } },
      then: { properties: { hubIds: { maxItems: 0 } } },
    },
    {
      if: { required: ['visibility'], properties: { visibility: { enum: ['public_hub', 'private_locked_hub'] } } },
      then: { required: ['hubIds'], properties: { hubIds: { minItems: 1 } } },
    },
  ],
};

/** The slider needs its prompt and the reverse; public takes no hubs; hub visibilities take 1-10. */
export function checkFrame(value: FrameInput, ctx: z.RefinementCtx): void {
  if ((value.slider === undefined) !== (value.sliderText === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: [value.slider === undefined ? 'slider' : 'sliderText'],
      message: 'slider and sliderText go together',
    });
  }
  if (value.visibility === 'public' && (value.hubIds?.length ?? 0) > 0) {
    ctx.addIssue({ code: 'custom', path: ['hubIds'], message: 'A public post has no hubs' });
  }
  if ((value.visibility === 'public_hub' || value.visibility === 'private_locked_hub') && (value.hubIds?.length ?? 0) === 0) {
    ctx.addIssue({ code: 'custom', path: ['hubIds'], message: '1-10 hubs for a hub visibility' });
  }
}

export const article = z
  .strictObject({
    kind: z.enum(articleKinds),
    url: z
      .url({ protocol: /^https?$/ })
      .max(textMax.articleUrl)
      .optional(),
    title: z.string().min(1).max(textMax.articleTitle).optional(),
    text: z.string().min(1).max(textMax.articleText).optional(),
    assetIds: idList(articleMediaMax).optional(),
  })
  .superRefine((value, ctx) => {
    if (value.kind === 'link' && !value.url) ctx.addIssue({ code: 'custom', path: ['url'], message: 'A link article needs a url' });
    if (value.kind === 'media' && !value.assetIds?.length)
      ctx.addIssue({ code: 'custom', path: ['assetIds'], message: 'A media article needs assets' });
    if (value.kind === 'text' && !value.text) ctx.addIssue({ code: 'custom', path: ['text'], message: 'A text article needs text' });
  })
  .meta({
    allOf: [
      { if: { properties: { kind: { const: 'link' } } }, then: requires('url') },
      { if: { properties: { kind: { const: 'media' } } }, then: { required: ['assetIds'], properties: { assetIds: { minItems: 1 } } } },
      { if: { properties: { kind: { const: 'text' } } }, then: requires('text') },
    ],
  });
