// Post request fields (spec 2.3; contract section 7).
import { z } from 'zod';
import { levels, type AccessLevel } from '../http/access-levels.ts';
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

/**
 * The audience rule of a post (spec 2.3), written once for TypeScript: per visibility, the level
 * its author needs and how many hubIds it takes (hub visibilities: hubs where the author is an
 * active member). checkFrame (zod), frameRules (the OpenAPI document's JSON Schema) and the POST
 * /posts description are made from it; app_private.check_post_audience is its SQL form, and
 * test/sql/posts/post-policies.test.ts feeds every visibility, hub count and level through both.
 */
export const audiences = {
  public: { level: levels.phone, hubs: { min: 0, max: 0 } },
  public_hub: { level: levels.hubReady, hubs: { min: 1, max: postHubsMax } },
  private_locked_hub: { level: levels.hubReady, hubs: { min: 1, max: postHubsMax } },
} as const satisfies Record<Visibility, { level: AccessLevel; hubs: { min: number; max: number } }>;

/** The visibilities that share one audience rule, in the order of `visibilities`. */
const audienceGroups = visibilities.reduce<{ members: Visibility[]; level: AccessLevel; min: number; max: number }[]>((groups, name) => {
  const { level, hubs } = audiences[name];
  const group = groups.find((g) => g.level === level && g.min === hubs.min && g.max === hubs.max);
  if (group) group.members.push(name);
  else groups.push({ members: [name], level, min: hubs.min, max: hubs.max });
  return groups;
}, []);

const hubCountText = (min: number, max: number) => (max === 0 ? 'no hubIds' : `${min}-${max} hubIds`);

/** "public needs level 3 and no hubIds; public_hub and private_locked_hub need level 4 and 1-10 hubIds", for descriptions. */
export const audienceText = audienceGroups
  .map(
    ({ members, level, min, max }) =>
      `${members.join(' and ')} ${members.length > 1 ? 'need' : 'needs'} level ${level} and ${hubCountText(min, max)}`,
  )
  .join('; ');

/** JSON Schema: the visibility is one of these. */
const visibilityIs = (members: Visibility[]) => ({
  required: ['visibility'],
  properties: { visibility: members.length === 1 ? { const: members[0] } : { enum: members } },
});

/** checkFrame's rules in JSON Schema, for the OpenAPI document (zod .meta of the bodies using it). */
export const frameRules = {
  dependentRequired: { slider: ['sliderText'], sliderText: ['slider'] },
  // (The most hubIds of any audience is the field's own maxItems.)
  allOf: audienceGroups.map(({ members, min, max }) => ({
    if: visibilityIs(members),
    then: max === 0 ? { properties: { hubIds: { maxItems: 0 } } } : { required: ['hubIds'], properties: { hubIds: { minItems: min } } },
  })),
};

/** The slider needs its prompt and the reverse; each visibility takes the hubs of its audience. */
export function checkFrame(value: FrameInput, ctx: z.RefinementCtx): void {
  if ((value.slider === undefined) !== (value.sliderText === undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: [value.slider === undefined ? 'slider' : 'sliderText'],
      message: 'slider and sliderText go together',
    });
  }
  const audience = value.visibility === undefined ? undefined : audiences[value.visibility as Visibility];
  const hubCount = value.hubIds?.length ?? 0;
  if (audience && audience.hubs.max === 0 && hubCount > 0) {
    ctx.addIssue({ code: 'custom', path: ['hubIds'], message: `A ${value.visibility} post has no hubs` });
  } else if (audience && hubCount < audience.hubs.min) {
    ctx.addIssue({ code: 'custom', path: ['hubIds'], message: `${audience.hubs.min}-${audience.hubs.max} hubs for a hub visibility` });
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
