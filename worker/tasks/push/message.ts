// The FCM message of one delivery (contract 12 "Message"). Nothing in it names a person: votes are
// anonymous (with a live tally a name would give the position away), and the other types follow
// the same rule so that no push carries a name through Google's servers. The app opens the row
// (notificationId) to show who. Text is English, generic and localisable: the app may show its own
// strings by the loc keys (`push_<type>_title` / `push_<type>_body`) instead.
//   * data (strings only): notificationId, type, postId and hubId when the row has them, badge;
//   * the app-icon badge after this row: apns.payload.aps.badge and android.notification.notification_count;
//   * votes collapse per post (android.collapse_key and apns-collapse-id `post_voted:<postId>`), so a
//     burst of votes on one post shows as one alert;
//   * hub rows thread per hub (apns.payload.aps.thread-id `hub:<hubId>`).
// After mark-read, a data-only badge message: data { type: "badge", badge }, collapse key `badge`,
// the iOS badge set silently (no alert, no sound).

/** What plan_pushes and claim_pushes answer for one delivery (db/sql/push.sql). */
export interface ClaimedDelivery {
  delivery_id: string;
  device_id: string;
  attempt: number;
  token: string;
  platform: 'ios' | 'android';
  notification_id: string | null;
  type: string | null;
  post_id: string | null;
  hub_id: string | null;
  badge: number;
  written_at: Date;
}

export interface FcmMessage {
  token: string;
  data: Record<string, string>;
  notification?: { title: string; body: string };
  android?: Record<string, unknown>;
  apns?: { headers?: Record<string, string>; payload: { aps: Record<string, unknown> } };
}

/** Title and body per notification type; any other type (one added later) gets the last line. */
export const pushTexts: Record<string, { title: string; body: string }> = {
  post_voted: { title: 'New vote', body: 'Someone voted on your post' },
  post_commented: { title: 'New comment', body: 'Someone commented on your post' },
  post_reposted: { title: 'New repost', body: 'Someone reposted your post' },
  post_shared_to_feed: { title: 'Post shared', body: 'Someone shared your post' },
  user_followed: { title: 'New follower', body: 'Someone started following you' },
  hub_invite_received: { title: 'Hub invitation', body: 'You were invited to a hub' },
  hub_join_request_created: { title: 'Join request', body: 'Someone asked to join your hub' },
  hub_join_request_approved: { title: 'Request approved', body: 'Your request to join a hub was approved' },
  hub_join_request_rejected: { title: 'Request declined', body: 'Your request to join a hub was declined' },
  hub_member_joined: { title: 'New member', body: 'Someone joined your hub' },
  hub_member_removed: { title: 'Removed from a hub', body: 'You were removed from a hub' },
  hub_role_changed: { title: 'Hub role changed', body: 'Your role in a hub changed' },
  post_removed: { title: 'Post removed', body: 'One of your posts was removed for breaking the rules' },
};
const otherText = { title: 'New notification', body: 'You have a new notification' };

export function buildMessage(delivery: ClaimedDelivery): FcmMessage {
  const badge = String(delivery.badge);
  if (delivery.notification_id === null || delivery.type === null) {
    return {
      token: delivery.token,
      data: { type: 'badge', badge },
      android: { collapse_key: 'badge' },
      apns: { headers: { 'apns-collapse-id': 'badge', 'apns-priority': '5' }, payload: { aps: { badge: delivery.badge } } },
    };
  }
  const text = pushTexts[delivery.type] ?? otherText;
  const data: Record<string, string> = { notificationId: delivery.notification_id, type: delivery.type, badge };
  if (delivery.post_id) data.postId = delivery.post_id;
  if (delivery.hub_id) data.hubId = delivery.hub_id;
  const collapseKey = delivery.type === 'post_voted' && delivery.post_id ? `post_voted:${delivery.post_id}` : undefined;
  const locKey = pushTexts[delivery.type] ? `push_${delivery.type}` : 'push_other';
  return {
    token: delivery.token,
    data,
    notification: text,
    android: {
      ...(collapseKey ? { collapse_key: collapseKey } : {}),
      notification: { notification_count: delivery.badge, title_loc_key: `${locKey}_title`, body_loc_key: `${locKey}_body` },
    },
    apns: {
      ...(collapseKey ? { headers: { 'apns-collapse-id': collapseKey } } : {}),
      payload: {
        aps: {
          alert: { title: text.title, body: text.body, 'title-loc-key': `${locKey}_title`, 'loc-key': `${locKey}_body` },
          badge: delivery.badge,
          ...(delivery.hub_id ? { 'thread-id': `hub:${delivery.hub_id}` } : {}),
        },
      },
    },
  };
}
