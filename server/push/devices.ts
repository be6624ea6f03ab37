// Push devices (contract 12 "Devices"): POST, GET and DELETE /users/me/push-devices. The rules
// (idempotent per token, a token moves to the session that registers it last, devices go with
// their session, the token never shown) live in db/sql/push.sql; this module shapes.
import { z } from 'zod';
import { endpoint } from '../http/endpoint.ts';
import { ApiError } from '../http/errors.ts';
import { text } from '../http/text.ts';

const tag = 'Push';

export const pushDevice = z
  .object({
    id: z.string(),
    provider: z.literal('fcm'),
    platform: z.enum(['ios', 'android']),
    tokenSuffix: text(8).describe('The last 8 characters of the token (the token itself is never shown).'),
    createdAt: z.string(),
    lastSeenAt: z.string(),
  })
  .meta({ id: 'PushDevice' });

interface DeviceRow {
  id: string;
  provider: 'fcm';
  platform: 'ios' | 'android';
  token_suffix: string;
  created_at: Date;
  last_seen_at: Date;
}

const shapeDevice = (row: DeviceRow): z.input<typeof pushDevice> => ({
  id: row.id,
  provider: row.provider,
  platform: row.platform,
  tokenSuffix: row.token_suffix,
  createdAt: row.created_at.toISOString(),
  lastSeenAt: row.last_seen_at.toISOString(),
});

const registration = z.strictObject({
  provider: z.literal('fcm'),
  token: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^[\x21-\x7e]+$/, 'Printable ASCII without spaces')
    .describe('The FCM registration token of the app on this device (printable ASCII, no spaces).')
    .meta({ examples: ['dXJpOmV4YW1wbGU:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx'] }),
  platform: z.enum(['ios', 'android']),
  locale: z
    .string()
    .max(35)
    .regex(/^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/, 'A BCP 47 language tag')
    .optional()
    .describe('BCP 47 language tag of the device (for example en-GB); kept with the device.')
    .meta({ examples: ['en-GB'] }),
});

export const pushDeviceEndpoints = [
  endpoint({
    method: 'post',
    path: '/users/me/push-devices',
    tag,
    summary: 'Register this device for push notifications',
    description:
      'Idempotent per token. A token this user registered before (from any of their sessions) answers 200 with the same ' +
      'record, moved to the calling session, platform and locale updated, lastSeenAt refreshed: register again whenever ' +
      'the app starts or FCM gives it a token. A token registered by another account (another user on the same phone) ' +
      'moves to the caller as a new record (201): the other account stops receiving pushes on it, and its pushes not yet ' +
      'sent are dropped. A device belongs to the session that registered it last: logout, logout from all devices, ' +
      'refresh-token reuse detection and session expiry remove it. A user keeps at most 10 devices: registering an ' +
      'eleventh removes the one seen longest ago. Concurrent registrations of one token never fail.',
    auth: 'bearer',
    limit: 'push_devices',
    body: registration,
    statusOf: {
      pick: (data) => ((data as { created: boolean }).created ? 201 : 200),
      descriptions: { 201: 'A new device record', 200: 'The token was registered already: the same record, refreshed' },
    },
    response: pushDevice,
    async handler({ body, tx }) {
      const { rows } = await tx.query<DeviceRow & { created: boolean }>('select * from app.register_push_device($1, $2, $3, $4)', [
        body.provider,
        body.platform,
        body.token,
        body.locale ?? null,
      ]);
      const row = rows[0] as DeviceRow & { created: boolean };
      return { ...shapeDevice(row), created: row.created };
    },
  }),

  endpoint({
    method: 'get',
    path: '/users/me/push-devices',
    tag,
    summary: "The caller's push devices",
    description: "Every device of the caller's live sessions, most recently seen first (at most 10). The token is never shown.",
    auth: 'bearer',
    response: z.object({ items: z.array(pushDevice) }),
    async handler({ tx }) {
      const { rows } = await tx.query<DeviceRow>(
        `select id, provider, platform, token_suffix, created_at, last_seen_at from app.push_devices order by last_seen_at desc, id`,
      );
      return { items: rows.map(shapeDevice) };
    },
  }),

  endpoint({
    method: 'delete',
    path: '/users/me/push-devices/{deviceId}',
    tag,
    summary: 'Remove a push device',
    description: "Stops pushes to it at once. Another user's device or an unknown id answers 404 PUSH_DEVICE_NOT_FOUND.",
    auth: 'bearer',
    ids: { deviceId: 'PUSH_DEVICE_NOT_FOUND' },
    limit: 'other_writes',
    response: z.object({ deleted: z.literal(true) }),
    async handler({ params, tx }) {
      const { rows } = await tx.query<{ deleted: boolean }>('select app.delete_push_device($1) as deleted', [params.deviceId]);
      if (!rows[0]?.deleted) throw new ApiError('PUSH_DEVICE_NOT_FOUND');
      return { deleted: true as const };
    },
  }),
];
