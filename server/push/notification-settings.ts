// Notification settings (contract 12 "Settings"): GET and PATCH /users/me/notification-settings,
// push on or off and per notification type, every type on by default (db/sql/notifications.sql stores the
// types turned off, so a type added to the enum later is on). They decide push only.
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { notificationTypes, publicationTypes, type NotificationType } from '../shapes/notification.ts';

const tag = 'Push';

const typeFlags = <T extends z.ZodType>(flag: T) =>
  z.strictObject(Object.fromEntries(notificationTypes.map((type) => [type, flag])) as Record<NotificationType, T>);

const settings = z
  .object({
    push: z.object({
      enabled: z.boolean().describe('The master switch: false, no push at all.'),
      types: typeFlags(z.boolean()).describe('Per notification type: false, no push of that type.'),
    }),
  })
  .meta({ id: 'NotificationSettings' });

const change = z.strictObject({
  push: z
    .strictObject({
      enabled: z.boolean().optional(),
      types: typeFlags(z.boolean().optional()).partial().optional(),
    })
    .optional(),
});

interface SettingRow {
  push_enabled: boolean;
  type: NotificationType;
  type_enabled: boolean;
}

function shape(rows: SettingRow[]): z.input<typeof settings> {
  const types = Object.fromEntries(notificationTypes.map((type) => [type, true])) as Record<NotificationType, boolean>;
  for (const row of rows) types[row.type] = row.type_enabled;
  return { push: { enabled: rows[0]?.push_enabled ?? true, types } };
}

const description =
  'They decide push only: rows, the list, the stream and the badges are the same whatever they say (hub contentMuted, ' +
  `which writes no row at all, keeps its meaning). ${publicationTypes.join(' and ')} are never pushed, whatever ` +
  'their flag says (publication alerts are rows and stream events only). Every type is on until turned off.';

export const notificationSettingsEndpoints = [
  endpoint({
    method: 'get',
    path: '/users/me/notification-settings',
    tag,
    summary: 'Push settings: on or off, and per notification type',
    description,
    auth: 'bearer',
    response: settings,
    async handler({ tx }) {
      return shape((await tx.query<SettingRow>('select * from app.notification_settings()')).rows);
    },
  }),

  endpoint({
    method: 'patch',
    path: '/users/me/notification-settings',
    tag,
    summary: 'Change push settings (any subset)',
    description: `${description} Send only what changes, for example { "push": { "types": { "post_voted": false } } }; the answer is the whole set.`,
    auth: 'bearer',
    limit: 'other_writes',
    body: change,
    response: settings,
    async handler({ body, tx }) {
      const types = Object.entries(body.push?.types ?? {}).filter(([, on]) => on !== undefined);
      const { rows } = await tx.query<SettingRow>(
        'select * from app.update_notification_settings($1, $2::app.notification_type[], $3::app.notification_type[])',
        [
          body.push?.enabled ?? null,
          types.filter(([, on]) => on).map(([type]) => type),
          types.filter(([, on]) => !on).map(([type]) => type),
        ],
      );
      return shape(rows);
    },
  }),
];
