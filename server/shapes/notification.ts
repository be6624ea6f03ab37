// The notification row (contract section 9), for the list and the live stream alike:
// { id, type, createdAt, isRead, actor: UserLite | null, postId, commentId, hub_id, invitationId, joinRequestId }.
// Both read it through app.notification_rows (db/sql/notifications.sql) as the viewer, so row-level security
// decides which rows exist and whether the actor is shown.
import { z } from 'zod';
import type { Storage } from '../uploads/storage.ts';
import { shapeUserLite, userLite } from './user-lite.ts';

/** Spec part 6; the enum app.notification_type. */
export const notificationTypes = [
  'post_voted',
  'post_commented',
  'post_reposted',
  'post_shared_to_feed',
  'user_followed',
  'hub_post_created',
  'post_shared_to_hub',
  'hub_invite_received',
  'hub_join_request_created',
  'hub_join_request_approved',
  'hub_join_request_rejected',
  'hub_member_joined',
  'hub_member_removed',
  'hub_role_changed',
  'post_removed',
] as const;

export type NotificationType = (typeof notificationTypes)[number];

/**
 * Publication alerts (spec part 6): a post reached a hub. Never pushed; silenced, with the
 * hub-scoped post_reposted, by a hub's content mute. app_private.is_publication and
 * app_private.content_mute_silences are the SQL homes; test/sql/notifications/notification-policies.test.ts
 * holds them equal to these lists.
 */
export const publicationTypes = ['hub_post_created', 'post_shared_to_hub'] as const satisfies readonly NotificationType[];

export const notification = z
  .object({
    id: z.string(),
    type: z.enum(notificationTypes),
    createdAt: z.string(),
    isRead: z.boolean(),
    actor: userLite.nullable().describe('Null when there is no actor, or the viewer may not see that user (a block either way).'),
    postId: z.string().nullable(),
    commentId: z.string().nullable(),
    hub_id: z.string().nullable().describe('Null for global notifications (spec 2.7).'),
    invitationId: z.string().nullable(),
    joinRequestId: z.string().nullable(),
  })
  .meta({ id: 'Notification' });

export type Notification = z.input<typeof notification>;

/** A row of app.notification_rows. */
export interface NotificationRow {
  notification_id: string;
  type: NotificationType;
  created_at: Date;
  is_read: boolean;
  post_id: string | null;
  comment_id: string | null;
  hub_id: string | null;
  invitation_id: string | null;
  join_request_id: string | null;
  actor_id: string | null;
  actor_username: string | null;
  actor_full_name: string | null;
  actor_photo_key: string | null;
}

export async function shapeNotification(storage: Storage, row: NotificationRow): Promise<Notification> {
  const actor =
    row.actor_id === null
      ? null
      : await shapeUserLite(storage, {
          id: row.actor_id,
          username: row.actor_username,
          full_name: row.actor_full_name,
          photo_key: row.actor_photo_key,
        });
  return {
    id: row.notification_id,
    type: row.type,
    createdAt: row.created_at.toISOString(),
    isRead: row.is_read,
    actor,
    postId: row.post_id,
    commentId: row.comment_id,
    hub_id: row.hub_id,
    invitationId: row.invitation_id,
    joinRequestId: row.join_request_id,
  };
}
