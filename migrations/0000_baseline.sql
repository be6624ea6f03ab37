-- Up Migration
-- The baseline: what the migrations up to 0331 left in a database, minus what db/sql/ re-creates
-- (functions, views, triggers, policies, grants). A fresh database starts here; a database that
-- ran those migrations (their files are in migrations/frozen/) has this recorded as applied by
-- db/migrate.ts without running it. Written once from pg_dump of that chain (types, tables,
-- constraints, indexes, row-level security switches, table comments) plus the statements pg_dump
-- does not keep (roles, role settings, default privileges, the rows the chain inserted).
-- Never edited (db/migrations.sha256): a table change is a new migration.

-- Roles (cluster-wide, so every statement is idempotent).
-- Database roles (design.md "Roles"). Roles are cluster-wide, so every statement is idempotent:
-- several databases of one cluster (development, test clones) share them.
--
--   authenticator  logs in for the API pools; NOINHERIT, so it holds no privilege of its own and
--                  switches per transaction with `set local role`.
--   app_anonymous  requests without a token: public reads only.
--   app_user       requests with a valid access token; inherits app_anonymous's public grants.
--   app_admin      internal tooling with the admin token; broader policies, never vote positions.
--   app_worker     logs in for graphile-worker; runs security definer task functions.
-- Passwords are not set here: the bootstrap sets them from the owner's credentials (db/roles.ts).
do $$
begin
  if not exists (select from pg_roles where rolname = 'app_anonymous') then
    create role app_anonymous nologin;
  end if;
  if not exists (select from pg_roles where rolname = 'app_user') then
    create role app_user nologin;
  end if;
  if not exists (select from pg_roles where rolname = 'app_admin') then
    create role app_admin nologin;
  end if;
  if not exists (select from pg_roles where rolname = 'authenticator') then
    create role authenticator login noinherit;
  end if;
  if not exists (select from pg_roles where rolname = 'app_worker') then
    create role app_worker login;
  end if;
end
$$;

grant app_anonymous to app_user;
grant app_anonymous, app_user, app_admin to authenticator;

-- The position is an argument of one call: keep that call's parameters out of the server log,
-- whatever the logging settings (statements are logged with $1, $2 placeholders only). Needs a
-- superuser migration role; elsewhere the DBA sets the same on the authenticator role.
do $$
begin
  alter role authenticator set log_parameter_max_length = 0;
  alter role authenticator set log_parameter_max_length_on_error = 0;
  alter role authenticator set log_statement = 'none';
  alter role authenticator set log_min_duration_statement = -1;
exception when insufficient_privilege then
  raise notice 'set log_parameter_max_length = 0 (and _on_error), log_statement = none for role authenticator by hand';
end
$$;

-- app          tables and functions the API roles may use (under row-level security).
-- app_private  secrets and bookkeeping: no API role has any privilege here; only security definer
--              functions owned by the migration role touch it.
create schema app;
create schema app_private;

-- Functions are executable by PUBLIC by default; every grant in this project is explicit instead.
alter default privileges revoke execute on functions from public;
alter default privileges in schema app revoke execute on functions from public;
alter default privileges in schema app_private revoke execute on functions from public;

create extension if not exists unaccent with schema public;
create extension if not exists pg_trgm with schema public;

-- type app.activity_kind
CREATE TYPE app.activity_kind AS ENUM (
    'post_voted',
    'post_commented',
    'post_reposted',
    'post_shared_to_feed',
    'post_shared_to_hub'
);

-- type app.article_kind
CREATE TYPE app.article_kind AS ENUM (
    'link',
    'media',
    'text'
);

-- type app.feed_context
CREATE TYPE app.feed_context AS ENUM (
    'own_post',
    'joined_hub_post',
    'shared_to_hub',
    'followed_author',
    'hub_co_member_author',
    'friend_interaction',
    'default_feed_user'
);

-- type app.hub_role
CREATE TYPE app.hub_role AS ENUM (
    'member',
    'admin',
    'super_admin'
);

-- type app.invitation_status
CREATE TYPE app.invitation_status AS ENUM (
    'invited',
    'accepted',
    'declined'
);

-- type app.join_request_source
CREATE TYPE app.join_request_source AS ENUM (
    'invite_link',
    'member_invitation'
);

-- type app.join_request_status
CREATE TYPE app.join_request_status AS ENUM (
    'pending',
    'approved',
    'rejected'
);

-- type app.moderation_action
CREATE TYPE app.moderation_action AS ENUM (
    'remove_post',
    'restore_post',
    'suspend_user',
    'unsuspend_user',
    'remove_hub',
    'resolve_report',
    'dismiss_report',
    'reopen_report'
);

-- type app.notification_type
CREATE TYPE app.notification_type AS ENUM (
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
    'post_removed'
);

-- type app.post_hub_kind
CREATE TYPE app.post_hub_kind AS ENUM (
    'target',
    'share'
);

-- type app.post_visibility
CREATE TYPE app.post_visibility AS ENUM (
    'public',
    'public_hub',
    'private_locked_hub'
);

-- type app.report_reason
CREATE TYPE app.report_reason AS ENUM (
    'spam',
    'harassment',
    'hate',
    'violence',
    'sexual',
    'misinformation',
    'other'
);

-- type app.report_state
CREATE TYPE app.report_state AS ENUM (
    'open',
    'resolved',
    'dismissed'
);

-- type app.report_target
CREATE TYPE app.report_target AS ENUM (
    'user',
    'hub',
    'post'
);

-- type app.upload_purpose
CREATE TYPE app.upload_purpose AS ENUM (
    'profile_photo',
    'hub_photo',
    'post_image',
    'document'
);

-- type app.vote_position
CREATE TYPE app.vote_position AS ENUM (
    'strong_left',
    'left',
    'neutral',
    'right',
    'strong_right'
);

-- type app_private.counter
CREATE TYPE app_private.counter AS ENUM (
    'post_comments',
    'post_reposts',
    'comment_replies',
    'user_posts',
    'user_followers',
    'user_following',
    'hub_members',
    'discussion_messages',
    'message_replies',
    'user_votes_received',
    'user_votes_cast'
);

-- type app_private.counter_change
CREATE TYPE app_private.counter_change AS (
	counter app_private.counter,
	subject uuid,
	delta bigint
);

-- type app_private.feed_item
CREATE TYPE app_private.feed_item AS (
	post_id uuid,
	at timestamp with time zone,
	context app.feed_context
);

-- type app_private.push_state
CREATE TYPE app_private.push_state AS ENUM (
    'pending',
    'sent',
    'given_up',
    'failed',
    'skipped'
);

-- type app_private.unread_change
CREATE TYPE app_private.unread_change AS (
	user_id uuid,
	type app.notification_type,
	hub_id uuid,
	post_id uuid,
	delta integer
);

-- table app.default_feed_users
CREATE TABLE app.default_feed_users (
    user_id uuid NOT NULL,
    added_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY app.default_feed_users FORCE ROW LEVEL SECURITY;

-- table app.assets
CREATE TABLE app.assets (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    upload_id uuid NOT NULL,
    owner_id uuid,
    purpose app.upload_purpose NOT NULL,
    content_type text NOT NULL,
    size bigint NOT NULL,
    checksum text NOT NULL,
    object_key text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT assets_checksum_check CHECK ((checksum ~ '^[0-9a-f]{64}$'::text))
);

ALTER TABLE ONLY app.assets FORCE ROW LEVEL SECURITY;

-- table app.moderation_log
CREATE TABLE app.moderation_log (
    id bigint NOT NULL,
    action app.moderation_action NOT NULL,
    target_type app.report_target NOT NULL,
    target_id uuid NOT NULL,
    reason text,
    report_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    actor text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY app.moderation_log FORCE ROW LEVEL SECURITY;

-- table app.hub_discussion_messages
CREATE TABLE app.hub_discussion_messages (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    discussion_id uuid NOT NULL,
    hub_id uuid NOT NULL,
    author_id uuid,
    parent_id uuid,
    text text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    reply_count integer DEFAULT 0 NOT NULL,
    CONSTRAINT hub_discussion_messages_reply_count_check CHECK ((reply_count >= 0)),
    CONSTRAINT hub_discussion_messages_text_check CHECK (((char_length(text) >= 1) AND (char_length(text) <= 2000)))
);

ALTER TABLE ONLY app.hub_discussion_messages FORCE ROW LEVEL SECURITY;

-- table app.notifications
CREATE TABLE app.notifications (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    recipient_id uuid NOT NULL,
    type app.notification_type NOT NULL,
    actor_id uuid,
    post_id uuid,
    comment_id uuid,
    hub_id uuid,
    invitation_id uuid,
    join_request_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    read_at timestamp with time zone,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    fanout_key uuid
);

ALTER TABLE ONLY app.notifications FORCE ROW LEVEL SECURITY;

-- comment app.TABLE notifications
COMMENT ON TABLE app.notifications IS '@foreignKey (recipient_id) references app.users (id)';

-- table app.posts
CREATE TABLE app.posts (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    author_id uuid NOT NULL,
    article_id uuid,
    thought_text text,
    slider_text text,
    slider_left_label text,
    slider_right_label text,
    visibility app.post_visibility NOT NULL,
    source_post_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    CONSTRAINT posts_has_content CHECK (((article_id IS NOT NULL) OR (thought_text IS NOT NULL) OR (slider_text IS NOT NULL))),
    CONSTRAINT posts_repost_has_no_article CHECK (((source_post_id IS NULL) OR (article_id IS NULL))),
    CONSTRAINT posts_slider_complete CHECK ((((slider_text IS NULL) = (slider_left_label IS NULL)) AND ((slider_text IS NULL) = (slider_right_label IS NULL)))),
    CONSTRAINT posts_slider_left_label_check CHECK (((char_length(slider_left_label) >= 1) AND (char_length(slider_left_label) <= 40))),
    CONSTRAINT posts_slider_right_label_check CHECK (((char_length(slider_right_label) >= 1) AND (char_length(slider_right_label) <= 40))),
    CONSTRAINT posts_slider_text_check CHECK (((char_length(slider_text) >= 1) AND (char_length(slider_text) <= 260))),
    CONSTRAINT posts_thought_text_check CHECK (((char_length(thought_text) >= 1) AND (char_length(thought_text) <= 2000)))
);

ALTER TABLE ONLY app.posts FORCE ROW LEVEL SECURITY;

-- function app.search_text(text)
CREATE FUNCTION app.search_text(p_text text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ select lower(public.unaccent('public.unaccent'::regdictionary, p_text)) $$;

-- table app.upload_intents
CREATE TABLE app.upload_intents (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    owner_id uuid,
    purpose app.upload_purpose NOT NULL,
    content_type text NOT NULL,
    content_length bigint NOT NULL,
    object_key text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    completed_at timestamp with time zone,
    CONSTRAINT upload_intents_content_length_check CHECK ((content_length > 0))
);

ALTER TABLE ONLY app.upload_intents FORCE ROW LEVEL SECURITY;

-- table app.comments
CREATE TABLE app.comments (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    post_id uuid NOT NULL,
    author_id uuid NOT NULL,
    parent_id uuid,
    text text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    CONSTRAINT comments_text_check CHECK (((char_length(text) >= 1) AND (char_length(text) <= 1000)))
);

ALTER TABLE ONLY app.comments FORCE ROW LEVEL SECURITY;

-- table app.follows
CREATE TABLE app.follows (
    follower_id uuid NOT NULL,
    followee_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    seq bigint NOT NULL,
    CONSTRAINT follows_not_self CHECK ((follower_id <> followee_id))
);

ALTER TABLE ONLY app.follows FORCE ROW LEVEL SECURITY;

-- table app.hub_memberships
CREATE TABLE app.hub_memberships (
    hub_id uuid NOT NULL,
    user_id uuid NOT NULL,
    role app.hub_role DEFAULT 'member'::app.hub_role NOT NULL,
    joined_at timestamp with time zone DEFAULT now() NOT NULL,
    content_muted boolean DEFAULT false NOT NULL
);

ALTER TABLE ONLY app.hub_memberships FORCE ROW LEVEL SECURITY;

-- table app.activity_events
CREATE TABLE app.activity_events (
    id bigint NOT NULL,
    actor_id uuid NOT NULL,
    post_id uuid NOT NULL,
    kind app.activity_kind NOT NULL,
    hub_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT activity_events_hub_scope CHECK (((kind = 'post_shared_to_hub'::app.activity_kind) = (hub_id IS NOT NULL)))
);

ALTER TABLE ONLY app.activity_events FORCE ROW LEVEL SECURITY;

-- table app.hub_invitations
CREATE TABLE app.hub_invitations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    hub_id uuid NOT NULL,
    invited_by uuid,
    phone_e164 text NOT NULL,
    masked_phone text GENERATED ALWAYS AS ((("left"(phone_e164, 3) || repeat('•'::text, GREATEST((length(phone_e164) - 6), 0))) || "right"(phone_e164, 3))) STORED,
    invitee_id uuid,
    requires_admin_approval boolean NOT NULL,
    status app.invitation_status DEFAULT 'invited'::app.invitation_status NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone DEFAULT (now() + '7 days'::interval) NOT NULL,
    responded_at timestamp with time zone,
    CONSTRAINT hub_invitations_phone_e164_check CHECK ((phone_e164 ~ '^\+[1-9][0-9]{6,14}$'::text))
);

ALTER TABLE ONLY app.hub_invitations FORCE ROW LEVEL SECURITY;

-- table app.hub_join_requests
CREATE TABLE app.hub_join_requests (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    hub_id uuid NOT NULL,
    user_id uuid NOT NULL,
    source app.join_request_source NOT NULL,
    invitation_id uuid,
    invite_link_id uuid,
    status app.join_request_status DEFAULT 'pending'::app.join_request_status NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    decided_at timestamp with time zone,
    decided_by uuid
);

ALTER TABLE ONLY app.hub_join_requests FORCE ROW LEVEL SECURITY;

-- table app_private.notification_settings
CREATE TABLE app_private.notification_settings (
    user_id uuid NOT NULL,
    push_enabled boolean DEFAULT true NOT NULL,
    push_disabled_types app.notification_type[] DEFAULT '{}'::app.notification_type[] NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

-- table app.hub_invite_links
CREATE TABLE app.hub_invite_links (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    hub_id uuid NOT NULL,
    token text NOT NULL,
    created_by uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone DEFAULT (now() + '7 days'::interval) NOT NULL
);

ALTER TABLE ONLY app.hub_invite_links FORCE ROW LEVEL SECURITY;

-- sequence app.activity_events_id_seq
ALTER TABLE app.activity_events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME app.activity_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- table app.articles
CREATE TABLE app.articles (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    kind app.article_kind NOT NULL,
    url text,
    title text,
    body text,
    asset_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    created_by uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT articles_body_check CHECK ((char_length(body) <= 10000)),
    CONSTRAINT articles_title_check CHECK ((char_length(title) <= 300)),
    CONSTRAINT articles_url_check CHECK ((char_length(url) <= 2048))
);

ALTER TABLE ONLY app.articles FORCE ROW LEVEL SECURITY;

-- table app.blocks
CREATE TABLE app.blocks (
    blocker_id uuid NOT NULL,
    blocked_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT blocks_not_self CHECK ((blocker_id <> blocked_id))
);

ALTER TABLE ONLY app.blocks FORCE ROW LEVEL SECURITY;

-- sequence app.follows_seq_seq
ALTER TABLE app.follows ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME app.follows_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- table app.hub_activity
CREATE TABLE app.hub_activity (
    hub_id uuid NOT NULL,
    user_id uuid NOT NULL,
    last_active_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY app.hub_activity FORCE ROW LEVEL SECURITY;

-- comment app.TABLE hub_activity
COMMENT ON TABLE app.hub_activity IS '@foreignKey (hub_id) references app.hubs (id)
@foreignKey (user_id) references app.users (id)';

-- table app.hub_discussion_stats
CREATE TABLE app.hub_discussion_stats (
    discussion_id uuid NOT NULL,
    hub_id uuid NOT NULL,
    message_count integer DEFAULT 0 NOT NULL,
    CONSTRAINT hub_discussion_stats_message_count_check CHECK ((message_count >= 0))
);

ALTER TABLE ONLY app.hub_discussion_stats FORCE ROW LEVEL SECURITY;

-- table app.hub_discussions
CREATE TABLE app.hub_discussions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    hub_id uuid NOT NULL,
    post_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_activity_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY app.hub_discussions FORCE ROW LEVEL SECURITY;

-- table app.hub_name_words
CREATE TABLE app.hub_name_words (
    hub_id uuid NOT NULL,
    word text NOT NULL COLLATE pg_catalog."C"
);

ALTER TABLE ONLY app.hub_name_words FORCE ROW LEVEL SECURITY;

-- comment app.TABLE hub_name_words
COMMENT ON TABLE app.hub_name_words IS 'The words of each hub''s name as hub search matches them (0225): kept by a trigger on app.hubs, read by GET /search/hubs.';

-- table app.hub_profiles
CREATE TABLE app.hub_profiles (
    user_id uuid NOT NULL,
    display_name text,
    profile_asset_id uuid,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT hub_profiles_display_name_length CHECK (((char_length(display_name) >= 2) AND (char_length(display_name) <= 80)))
);

ALTER TABLE ONLY app.hub_profiles FORCE ROW LEVEL SECURITY;

-- table app.hubs
CREATE TABLE app.hubs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    profile_asset_id uuid NOT NULL,
    custom_link text,
    is_recommended boolean DEFAULT false NOT NULL,
    created_by uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_activity_at timestamp with time zone DEFAULT now() NOT NULL,
    removed_at timestamp with time zone,
    CONSTRAINT hubs_custom_link_check CHECK ((custom_link ~ '^[a-z0-9_-]{3,40}$'::text)),
    CONSTRAINT hubs_description_check CHECK ((char_length(description) <= 1000)),
    CONSTRAINT hubs_name_check CHECK (((char_length(name) >= 3) AND (char_length(name) <= 60)))
);

ALTER TABLE ONLY app.hubs FORCE ROW LEVEL SECURITY;

-- sequence app.moderation_log_id_seq
ALTER TABLE app.moderation_log ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME app.moderation_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- table app.phone_identities
CREATE TABLE app.phone_identities (
    user_id uuid NOT NULL,
    phone_e164 text NOT NULL,
    verified_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT phone_identities_e164 CHECK ((phone_e164 ~ '^\+[1-9][0-9]{6,14}$'::text))
);

ALTER TABLE ONLY app.phone_identities FORCE ROW LEVEL SECURITY;

-- table app.post_hubs
CREATE TABLE app.post_hubs (
    post_id uuid NOT NULL,
    hub_id uuid NOT NULL,
    kind app.post_hub_kind NOT NULL,
    added_by uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY app.post_hubs FORCE ROW LEVEL SECURITY;

-- table app.post_shares
CREATE TABLE app.post_shares (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    post_id uuid NOT NULL,
    user_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY app.post_shares FORCE ROW LEVEL SECURITY;

-- table app.push_devices
CREATE TABLE app.push_devices (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    user_id uuid NOT NULL,
    session_id uuid NOT NULL,
    provider text NOT NULL,
    platform text NOT NULL,
    token text NOT NULL,
    token_hash bytea NOT NULL,
    token_suffix text GENERATED ALWAYS AS ("right"(token, 8)) STORED NOT NULL,
    locale text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT push_devices_locale_check CHECK ((char_length(locale) <= 35)),
    CONSTRAINT push_devices_platform_check CHECK ((platform = ANY (ARRAY['ios'::text, 'android'::text]))),
    CONSTRAINT push_devices_provider_check CHECK ((provider = 'fcm'::text)),
    CONSTRAINT push_devices_token_check CHECK (((char_length(token) >= 1) AND (char_length(token) <= 4096)))
);

ALTER TABLE ONLY app.push_devices FORCE ROW LEVEL SECURITY;

-- table app.reports
CREATE TABLE app.reports (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    reporter_id uuid,
    target_type app.report_target NOT NULL,
    target_id uuid NOT NULL,
    reason app.report_reason NOT NULL,
    details text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    state app.report_state DEFAULT 'open'::app.report_state NOT NULL,
    decided_at timestamp with time zone,
    decided_by text,
    snapshot jsonb,
    CONSTRAINT reports_details_check CHECK ((char_length(details) <= 1000))
);

ALTER TABLE ONLY app.reports FORCE ROW LEVEL SECURITY;

-- table app.reserved_handles
CREATE TABLE app.reserved_handles (
    handle text NOT NULL
);

-- table app.saved_discussions
CREATE TABLE app.saved_discussions (
    user_id uuid NOT NULL,
    discussion_id uuid NOT NULL,
    hub_id uuid NOT NULL,
    saved_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY app.saved_discussions FORCE ROW LEVEL SECURITY;

-- table app.saved_posts
CREATE TABLE app.saved_posts (
    user_id uuid NOT NULL,
    post_id uuid NOT NULL,
    saved_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY app.saved_posts FORCE ROW LEVEL SECURITY;

-- table app.sessions
CREATE TABLE app.sessions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    user_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone
);

ALTER TABLE ONLY app.sessions FORCE ROW LEVEL SECURITY;

-- table app.user_name_words
CREATE TABLE app.user_name_words (
    user_id uuid NOT NULL,
    word text NOT NULL COLLATE pg_catalog."C"
);

ALTER TABLE ONLY app.user_name_words FORCE ROW LEVEL SECURITY;

-- comment app.TABLE user_name_words
COMMENT ON TABLE app.user_name_words IS 'The words of each user''s full_name as people search matches them (0223): kept by a trigger on app.users, read by GET /search/users.';

-- table app.users
CREATE TABLE app.users (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    username text,
    full_name text,
    bio text,
    profile_asset_id uuid,
    terms_version text,
    terms_accepted_at timestamp with time zone,
    media_completed_at timestamp with time zone,
    contacts_synced_at timestamp with time zone,
    merged_into uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT users_bio_length CHECK ((char_length(bio) <= 160)),
    CONSTRAINT users_full_name_length CHECK (((char_length(full_name) >= 2) AND (char_length(full_name) <= 80))),
    CONSTRAINT users_username_format CHECK ((username ~ '^[a-z0-9_]{3,30}$'::text))
);

ALTER TABLE ONLY app.users FORCE ROW LEVEL SECURITY;

-- table app.vote_counters
CREATE TABLE app.vote_counters (
    post_id uuid CONSTRAINT vote_counters_post_id_not_null1 NOT NULL,
    hub_id uuid,
    slot smallint CONSTRAINT vote_counters_slot_not_null1 NOT NULL,
    strong_left_count bigint DEFAULT 0 NOT NULL,
    left_count bigint DEFAULT 0 NOT NULL,
    neutral_count bigint DEFAULT 0 NOT NULL,
    right_count bigint DEFAULT 0 NOT NULL,
    strong_right_count bigint DEFAULT 0 NOT NULL,
    CONSTRAINT vote_counters_slot_check1 CHECK (((slot >= 0) AND (slot <= 15)))
)
WITH (fillfactor='50');

ALTER TABLE ONLY app.vote_counters FORCE ROW LEVEL SECURITY;

-- table app.vote_receipts
CREATE TABLE app.vote_receipts (
    post_id uuid NOT NULL,
    user_id uuid NOT NULL,
    voted_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY app.vote_receipts FORCE ROW LEVEL SECURITY;

-- comment app.TABLE vote_receipts
COMMENT ON TABLE app.vote_receipts IS '@foreignKey (post_id) references app.posts (id)
@foreignKey (user_id) references app.users (id)';

-- table app.vote_scope_receipts
CREATE TABLE app.vote_scope_receipts (
    post_id uuid NOT NULL,
    user_id uuid NOT NULL,
    hub_id uuid
);

ALTER TABLE ONLY app.vote_scope_receipts FORCE ROW LEVEL SECURITY;

-- table app_private.account_states
CREATE TABLE app_private.account_states (
    user_id uuid NOT NULL,
    held_username text,
    hidden_at timestamp with time zone DEFAULT now() NOT NULL,
    deletion_requested_at timestamp with time zone,
    purge_after timestamp with time zone,
    suspended_at timestamp with time zone,
    suspended_until timestamp with time zone,
    suspension_reason text,
    purge_started_at timestamp with time zone,
    CONSTRAINT account_states_check CHECK (((deletion_requested_at IS NULL) = (purge_after IS NULL))),
    CONSTRAINT account_states_check1 CHECK (((suspended_at IS NOT NULL) OR (suspended_until IS NULL)))
);

-- comment app_private.TABLE account_states
COMMENT ON TABLE app_private.account_states IS 'Accounts hidden from everyone else: deletion requested (purged after purge_after) and/or suspended (0261). A row exists exactly while the account is hidden.';

-- table app_private.anonymous_devices
CREATE TABLE app_private.anonymous_devices (
    device_id text NOT NULL,
    user_id uuid NOT NULL
);

-- table app_private.badge_changes
CREATE TABLE app_private.badge_changes (
    id bigint NOT NULL,
    user_id uuid NOT NULL,
    tx_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

-- sequence app_private.badge_changes_id_seq
ALTER TABLE app_private.badge_changes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME app_private.badge_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- table app_private.counters
CREATE TABLE app_private.counters (
    counter app_private.counter NOT NULL,
    subject uuid NOT NULL,
    slot smallint NOT NULL,
    n bigint NOT NULL,
    CONSTRAINT counters_slot_check CHECK (((slot >= 0) AND (slot <= 15)))
);

-- comment app_private.TABLE counters
COMMENT ON TABLE app_private.counters IS 'Counters shown by the API, as sums of up to 16 slot rows per subject (0220). Written only by the counting triggers; read through app_private.counter_value.';

-- table app_private.data_exports
CREATE TABLE app_private.data_exports (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    user_id uuid NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    object_key text,
    requested_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT data_exports_check CHECK (((status = 'ready'::text) = (object_key IS NOT NULL))),
    CONSTRAINT data_exports_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'ready'::text, 'failed'::text])))
);

-- comment app_private.TABLE data_exports
COMMENT ON TABLE app_private.data_exports IS 'Data exports of users (0264): read through app.data_export, written by the export_account task.';

-- table app_private.hidden_rows
CREATE TABLE app_private.hidden_rows (
    user_id uuid NOT NULL,
    kind text NOT NULL,
    row_id uuid,
    data jsonb,
    CONSTRAINT hidden_rows_check CHECK (((kind = ANY (ARRAY['post'::text, 'comment'::text])) = ((row_id IS NOT NULL) AND (data IS NULL)))),
    CONSTRAINT hidden_rows_kind_check CHECK ((kind = ANY (ARRAY['post'::text, 'comment'::text, 'follow'::text, 'membership'::text, 'activity'::text, 'hub_activity'::text])))
);

-- comment app_private.TABLE hidden_rows
COMMENT ON TABLE app_private.hidden_rows IS 'What app_private.hide_account took out of sight, per hidden account (0261).';

-- table app_private.hub_list_entries
CREATE TABLE app_private.hub_list_entries (
    hub_id uuid NOT NULL,
    user_id uuid NOT NULL,
    activity_at timestamp with time zone NOT NULL,
    status text NOT NULL,
    role app.hub_role,
    invitation_id uuid,
    expires_at timestamp with time zone DEFAULT 'infinity'::timestamp with time zone NOT NULL,
    CONSTRAINT hub_list_entries_check CHECK (((status = 'member'::text) = (role IS NOT NULL))),
    CONSTRAINT hub_list_entries_check1 CHECK (((status = 'invited'::text) = (invitation_id IS NOT NULL))),
    CONSTRAINT hub_list_entries_status_check CHECK ((status = ANY (ARRAY['member'::text, 'pending_admin_approval'::text, 'invited'::text])))
);

ALTER TABLE ONLY app_private.hub_list_entries FORCE ROW LEVEL SECURITY;

-- comment app_private.TABLE hub_list_entries
COMMENT ON TABLE app_private.hub_list_entries IS 'The rows of GET /users/me/hubs with their ordering key (0330): kept by triggers on memberships, join requests and invitations; activity_at moved by the actor''s activity and the propagation sweep.';

-- table app_private.hub_list_propagations
CREATE TABLE app_private.hub_list_propagations (
    hub_id uuid NOT NULL,
    queued boolean NOT NULL,
    not_before timestamp with time zone DEFAULT now() NOT NULL,
    target_at timestamp with time zone,
    after_user uuid
);

ALTER TABLE ONLY app_private.hub_list_propagations FORCE ROW LEVEL SECURITY;

-- comment app_private.TABLE hub_list_propagations
COMMENT ON TABLE app_private.hub_list_propagations IS 'Hubs whose latest activity the sweep carries to app_private.hub_list_entries (0330).';

-- table app_private.idp_subjects
CREATE TABLE app_private.idp_subjects (
    subject text NOT NULL,
    user_id uuid NOT NULL
);

-- table app_private.notification_dispatch
CREATE TABLE app_private.notification_dispatch (
    singleton boolean DEFAULT true NOT NULL,
    dispatched_to xid8 NOT NULL,
    CONSTRAINT notification_dispatch_singleton_check CHECK (singleton)
);

-- table app_private.otp_codes
CREATE TABLE app_private.otp_codes (
    phone_e164 text NOT NULL,
    code_hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    failed_attempts integer DEFAULT 0 NOT NULL
);

-- table app_private.push_cursor
CREATE TABLE app_private.push_cursor (
    singleton boolean DEFAULT true NOT NULL,
    pushed_to xid8 NOT NULL,
    CONSTRAINT push_cursor_singleton_check CHECK (singleton)
);

-- table app_private.push_deliveries
CREATE TABLE app_private.push_deliveries (
    id bigint NOT NULL,
    device_id uuid NOT NULL,
    notification_id uuid,
    badge_change_id bigint,
    state app_private.push_state DEFAULT 'pending'::app_private.push_state NOT NULL,
    attempts smallint DEFAULT 0 NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT push_deliveries_check CHECK ((num_nonnulls(notification_id, badge_change_id) = 1))
);

-- sequence app_private.push_deliveries_id_seq
ALTER TABLE app_private.push_deliveries ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME app_private.push_deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- table app_private.rate_limits
CREATE TABLE app_private.rate_limits (
    key text NOT NULL,
    window_started_at timestamp with time zone NOT NULL,
    hits integer NOT NULL
);

-- table app_private.refresh_tokens
CREATE TABLE app_private.refresh_tokens (
    token_hash bytea NOT NULL,
    session_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    rotated_at timestamp with time zone
);

-- table app_private.removed_posts
CREATE TABLE app_private.removed_posts (
    post_id uuid NOT NULL,
    removed_at timestamp with time zone DEFAULT now() NOT NULL,
    reason text NOT NULL,
    prior_deleted_at timestamp with time zone
);

-- table app_private.sealed_ballots
CREATE TABLE app_private.sealed_ballots (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    post_id uuid NOT NULL,
    hub_id uuid,
    key_id text NOT NULL,
    nonce bytea NOT NULL,
    ciphertext bytea NOT NULL,
    CONSTRAINT sealed_ballots_ciphertext_check CHECK ((octet_length(ciphertext) = 17)),
    CONSTRAINT sealed_ballots_key_id_check CHECK ((key_id ~ '^[A-Za-z0-9_-]{1,32}$'::text)),
    CONSTRAINT sealed_ballots_nonce_check CHECK ((octet_length(nonce) = 12))
);

ALTER TABLE ONLY app_private.sealed_ballots FORCE ROW LEVEL SECURITY;

-- comment app_private.TABLE sealed_ballots
COMMENT ON TABLE app_private.sealed_ballots IS 'Positions sealed by the API (AES-256-GCM, BALLOT_KEY), one per counted scope of a vote, until a tallier folds at least k of one post and scope into app.vote_counters (0290).';

-- table app_private.sliding_limits
CREATE TABLE app_private.sliding_limits (
    key text NOT NULL,
    hits timestamp with time zone[] NOT NULL
);

-- table app_private.unread_counters
CREATE TABLE app_private.unread_counters (
    user_id uuid NOT NULL,
    kind "char" NOT NULL,
    scope_id uuid,
    slot smallint NOT NULL,
    unread bigint NOT NULL,
    CONSTRAINT unread_counters_check CHECK (((kind = 'g'::"char") = (scope_id IS NULL))),
    CONSTRAINT unread_counters_kind_check CHECK ((kind = ANY (ARRAY['g'::"char", 'h'::"char", 'r'::"char"]))),
    CONSTRAINT unread_counters_slot_check CHECK (((slot >= 0) AND (slot <= 31)))
);

-- comment app_private.TABLE unread_counters
COMMENT ON TABLE app_private.unread_counters IS 'Unread notifications per user, counting bucket and slot (migrations/0201); the sum of a bucket''s slots is its count.';

-- table app_private.user_merge_steps
CREATE TABLE app_private.user_merge_steps (
    "position" integer NOT NULL,
    step regprocedure NOT NULL
);

-- table app_private.worker_heartbeats
CREATE TABLE app_private.worker_heartbeats (
    worker_id text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    seen_at timestamp with time zone DEFAULT now() NOT NULL
);

-- constraint app.activity_events activity_events_pkey
ALTER TABLE ONLY app.activity_events
    ADD CONSTRAINT activity_events_pkey PRIMARY KEY (id);

-- constraint app.articles articles_pkey
ALTER TABLE ONLY app.articles
    ADD CONSTRAINT articles_pkey PRIMARY KEY (id);

-- constraint app.assets assets_object_key_key
ALTER TABLE ONLY app.assets
    ADD CONSTRAINT assets_object_key_key UNIQUE (object_key);

-- constraint app.assets assets_pkey
ALTER TABLE ONLY app.assets
    ADD CONSTRAINT assets_pkey PRIMARY KEY (id);

-- constraint app.assets assets_upload_id_key
ALTER TABLE ONLY app.assets
    ADD CONSTRAINT assets_upload_id_key UNIQUE (upload_id);

-- constraint app.blocks blocks_pkey
ALTER TABLE ONLY app.blocks
    ADD CONSTRAINT blocks_pkey PRIMARY KEY (blocker_id, blocked_id);

-- constraint app.comments comments_pkey
ALTER TABLE ONLY app.comments
    ADD CONSTRAINT comments_pkey PRIMARY KEY (id);

-- constraint app.default_feed_users default_feed_users_pkey
ALTER TABLE ONLY app.default_feed_users
    ADD CONSTRAINT default_feed_users_pkey PRIMARY KEY (user_id);

-- constraint app.follows follows_pkey
ALTER TABLE ONLY app.follows
    ADD CONSTRAINT follows_pkey PRIMARY KEY (follower_id, followee_id);

-- constraint app.follows follows_seq_key
ALTER TABLE ONLY app.follows
    ADD CONSTRAINT follows_seq_key UNIQUE (seq);

-- constraint app.hub_activity hub_activity_pkey
ALTER TABLE ONLY app.hub_activity
    ADD CONSTRAINT hub_activity_pkey PRIMARY KEY (hub_id, user_id);

-- constraint app.hub_discussion_messages hub_discussion_messages_pkey
ALTER TABLE ONLY app.hub_discussion_messages
    ADD CONSTRAINT hub_discussion_messages_pkey PRIMARY KEY (id);

-- constraint app.hub_discussion_stats hub_discussion_stats_pkey
ALTER TABLE ONLY app.hub_discussion_stats
    ADD CONSTRAINT hub_discussion_stats_pkey PRIMARY KEY (discussion_id);

-- constraint app.hub_discussions hub_discussions_hub_id_post_id_key
ALTER TABLE ONLY app.hub_discussions
    ADD CONSTRAINT hub_discussions_hub_id_post_id_key UNIQUE (hub_id, post_id);

-- constraint app.hub_discussions hub_discussions_id_hub_key
ALTER TABLE ONLY app.hub_discussions
    ADD CONSTRAINT hub_discussions_id_hub_key UNIQUE (id, hub_id);

-- constraint app.hub_discussions hub_discussions_pkey
ALTER TABLE ONLY app.hub_discussions
    ADD CONSTRAINT hub_discussions_pkey PRIMARY KEY (id);

-- constraint app.hub_invitations hub_invitations_pkey
ALTER TABLE ONLY app.hub_invitations
    ADD CONSTRAINT hub_invitations_pkey PRIMARY KEY (id);

-- constraint app.hub_invite_links hub_invite_links_pkey
ALTER TABLE ONLY app.hub_invite_links
    ADD CONSTRAINT hub_invite_links_pkey PRIMARY KEY (id);

-- constraint app.hub_invite_links hub_invite_links_token_key
ALTER TABLE ONLY app.hub_invite_links
    ADD CONSTRAINT hub_invite_links_token_key UNIQUE (token);

-- constraint app.hub_join_requests hub_join_requests_pkey
ALTER TABLE ONLY app.hub_join_requests
    ADD CONSTRAINT hub_join_requests_pkey PRIMARY KEY (id);

-- constraint app.hub_memberships hub_memberships_pkey
ALTER TABLE ONLY app.hub_memberships
    ADD CONSTRAINT hub_memberships_pkey PRIMARY KEY (hub_id, user_id);

-- constraint app.hub_name_words hub_name_words_pkey
ALTER TABLE ONLY app.hub_name_words
    ADD CONSTRAINT hub_name_words_pkey PRIMARY KEY (hub_id, word);

-- constraint app.hub_profiles hub_profiles_pkey
ALTER TABLE ONLY app.hub_profiles
    ADD CONSTRAINT hub_profiles_pkey PRIMARY KEY (user_id);

-- constraint app.hubs hubs_custom_link_key
ALTER TABLE ONLY app.hubs
    ADD CONSTRAINT hubs_custom_link_key UNIQUE (custom_link);

-- constraint app.hubs hubs_pkey
ALTER TABLE ONLY app.hubs
    ADD CONSTRAINT hubs_pkey PRIMARY KEY (id);

-- constraint app.moderation_log moderation_log_pkey
ALTER TABLE ONLY app.moderation_log
    ADD CONSTRAINT moderation_log_pkey PRIMARY KEY (id);

-- constraint app.notifications notifications_pkey
ALTER TABLE ONLY app.notifications
    ADD CONSTRAINT notifications_pkey PRIMARY KEY (id);

-- constraint app.phone_identities phone_identities_phone_e164_key
ALTER TABLE ONLY app.phone_identities
    ADD CONSTRAINT phone_identities_phone_e164_key UNIQUE (phone_e164);

-- constraint app.phone_identities phone_identities_pkey
ALTER TABLE ONLY app.phone_identities
    ADD CONSTRAINT phone_identities_pkey PRIMARY KEY (user_id);

-- constraint app.post_hubs post_hubs_pkey
ALTER TABLE ONLY app.post_hubs
    ADD CONSTRAINT post_hubs_pkey PRIMARY KEY (post_id, hub_id);

-- constraint app.post_shares post_shares_pkey
ALTER TABLE ONLY app.post_shares
    ADD CONSTRAINT post_shares_pkey PRIMARY KEY (id);

-- constraint app.posts posts_pkey
ALTER TABLE ONLY app.posts
    ADD CONSTRAINT posts_pkey PRIMARY KEY (id);

-- constraint app.push_devices push_devices_pkey
ALTER TABLE ONLY app.push_devices
    ADD CONSTRAINT push_devices_pkey PRIMARY KEY (id);

-- constraint app.push_devices push_devices_token_hash_key
ALTER TABLE ONLY app.push_devices
    ADD CONSTRAINT push_devices_token_hash_key UNIQUE (token_hash);

-- constraint app.reports reports_pkey
ALTER TABLE ONLY app.reports
    ADD CONSTRAINT reports_pkey PRIMARY KEY (id);

-- constraint app.reserved_handles reserved_handles_pkey
ALTER TABLE ONLY app.reserved_handles
    ADD CONSTRAINT reserved_handles_pkey PRIMARY KEY (handle);

-- constraint app.saved_discussions saved_discussions_pkey
ALTER TABLE ONLY app.saved_discussions
    ADD CONSTRAINT saved_discussions_pkey PRIMARY KEY (user_id, discussion_id);

-- constraint app.saved_posts saved_posts_pkey
ALTER TABLE ONLY app.saved_posts
    ADD CONSTRAINT saved_posts_pkey PRIMARY KEY (user_id, post_id);

-- constraint app.sessions sessions_pkey
ALTER TABLE ONLY app.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);

-- constraint app.upload_intents upload_intents_object_key_key
ALTER TABLE ONLY app.upload_intents
    ADD CONSTRAINT upload_intents_object_key_key UNIQUE (object_key);

-- constraint app.upload_intents upload_intents_pkey
ALTER TABLE ONLY app.upload_intents
    ADD CONSTRAINT upload_intents_pkey PRIMARY KEY (id);

-- constraint app.user_name_words user_name_words_pkey
ALTER TABLE ONLY app.user_name_words
    ADD CONSTRAINT user_name_words_pkey PRIMARY KEY (user_id, word);

-- constraint app.users users_pkey
ALTER TABLE ONLY app.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

-- constraint app.vote_counters vote_counters_post_id_hub_id_slot_key
ALTER TABLE ONLY app.vote_counters
    ADD CONSTRAINT vote_counters_post_id_hub_id_slot_key UNIQUE NULLS NOT DISTINCT (post_id, hub_id, slot);

-- constraint app.vote_receipts vote_receipts_pkey
ALTER TABLE ONLY app.vote_receipts
    ADD CONSTRAINT vote_receipts_pkey PRIMARY KEY (post_id, user_id);

-- constraint app.vote_scope_receipts vote_scope_receipts_post_id_user_id_hub_id_key
ALTER TABLE ONLY app.vote_scope_receipts
    ADD CONSTRAINT vote_scope_receipts_post_id_user_id_hub_id_key UNIQUE NULLS NOT DISTINCT (post_id, user_id, hub_id);

-- constraint app_private.account_states account_states_pkey
ALTER TABLE ONLY app_private.account_states
    ADD CONSTRAINT account_states_pkey PRIMARY KEY (user_id);

-- constraint app_private.anonymous_devices anonymous_devices_pkey
ALTER TABLE ONLY app_private.anonymous_devices
    ADD CONSTRAINT anonymous_devices_pkey PRIMARY KEY (device_id);

-- constraint app_private.badge_changes badge_changes_pkey
ALTER TABLE ONLY app_private.badge_changes
    ADD CONSTRAINT badge_changes_pkey PRIMARY KEY (id);

-- constraint app_private.counters counters_pkey
ALTER TABLE ONLY app_private.counters
    ADD CONSTRAINT counters_pkey PRIMARY KEY (counter, subject, slot);

-- constraint app_private.data_exports data_exports_pkey
ALTER TABLE ONLY app_private.data_exports
    ADD CONSTRAINT data_exports_pkey PRIMARY KEY (id);

-- constraint app_private.hub_list_entries hub_list_entries_pkey
ALTER TABLE ONLY app_private.hub_list_entries
    ADD CONSTRAINT hub_list_entries_pkey PRIMARY KEY (hub_id, user_id);

-- constraint app_private.hub_list_propagations hub_list_propagations_pkey
ALTER TABLE ONLY app_private.hub_list_propagations
    ADD CONSTRAINT hub_list_propagations_pkey PRIMARY KEY (hub_id);

-- constraint app_private.idp_subjects idp_subjects_pkey
ALTER TABLE ONLY app_private.idp_subjects
    ADD CONSTRAINT idp_subjects_pkey PRIMARY KEY (subject);

-- constraint app_private.notification_dispatch notification_dispatch_pkey
ALTER TABLE ONLY app_private.notification_dispatch
    ADD CONSTRAINT notification_dispatch_pkey PRIMARY KEY (singleton);

-- constraint app_private.notification_settings notification_settings_pkey
ALTER TABLE ONLY app_private.notification_settings
    ADD CONSTRAINT notification_settings_pkey PRIMARY KEY (user_id);

-- constraint app_private.otp_codes otp_codes_pkey
ALTER TABLE ONLY app_private.otp_codes
    ADD CONSTRAINT otp_codes_pkey PRIMARY KEY (phone_e164);

-- constraint app_private.push_cursor push_cursor_pkey
ALTER TABLE ONLY app_private.push_cursor
    ADD CONSTRAINT push_cursor_pkey PRIMARY KEY (singleton);

-- constraint app_private.push_deliveries push_deliveries_pkey
ALTER TABLE ONLY app_private.push_deliveries
    ADD CONSTRAINT push_deliveries_pkey PRIMARY KEY (id);

-- constraint app_private.rate_limits rate_limits_pkey
ALTER TABLE ONLY app_private.rate_limits
    ADD CONSTRAINT rate_limits_pkey PRIMARY KEY (key);

-- constraint app_private.refresh_tokens refresh_tokens_pkey
ALTER TABLE ONLY app_private.refresh_tokens
    ADD CONSTRAINT refresh_tokens_pkey PRIMARY KEY (token_hash);

-- constraint app_private.removed_posts removed_posts_pkey
ALTER TABLE ONLY app_private.removed_posts
    ADD CONSTRAINT removed_posts_pkey PRIMARY KEY (post_id);

-- constraint app_private.sealed_ballots sealed_ballots_pkey
ALTER TABLE ONLY app_private.sealed_ballots
    ADD CONSTRAINT sealed_ballots_pkey PRIMARY KEY (id);

-- constraint app_private.sliding_limits sliding_limits_pkey
ALTER TABLE ONLY app_private.sliding_limits
    ADD CONSTRAINT sliding_limits_pkey PRIMARY KEY (key);

-- constraint app_private.unread_counters unread_counters_user_id_kind_scope_id_slot_key
ALTER TABLE ONLY app_private.unread_counters
    ADD CONSTRAINT unread_counters_user_id_kind_scope_id_slot_key UNIQUE NULLS NOT DISTINCT (user_id, kind, scope_id, slot);

-- constraint app_private.user_merge_steps user_merge_steps_pkey
ALTER TABLE ONLY app_private.user_merge_steps
    ADD CONSTRAINT user_merge_steps_pkey PRIMARY KEY ("position");

-- constraint app_private.user_merge_steps user_merge_steps_step_key
ALTER TABLE ONLY app_private.user_merge_steps
    ADD CONSTRAINT user_merge_steps_step_key UNIQUE (step);

-- constraint app_private.worker_heartbeats worker_heartbeats_pkey
ALTER TABLE ONLY app_private.worker_heartbeats
    ADD CONSTRAINT worker_heartbeats_pkey PRIMARY KEY (worker_id);

-- index app.activity_events_actor_shares
CREATE INDEX activity_events_actor_shares ON app.activity_events USING btree (actor_id, created_at DESC, post_id DESC) WHERE (kind = ANY (ARRAY['post_shared_to_feed'::app.activity_kind, 'post_shared_to_hub'::app.activity_kind]));

-- index app.activity_events_actor_time
CREATE INDEX activity_events_actor_time ON app.activity_events USING btree (actor_id, created_at DESC, post_id DESC) INCLUDE (kind);

-- index app.activity_events_hub_time
CREATE INDEX activity_events_hub_time ON app.activity_events USING btree (hub_id, created_at DESC, post_id DESC) WHERE (hub_id IS NOT NULL);

-- index app.activity_events_post_time
CREATE INDEX activity_events_post_time ON app.activity_events USING btree (post_id, created_at DESC) INCLUDE (actor_id, kind, hub_id);

-- index app.activity_events_time
CREATE INDEX activity_events_time ON app.activity_events USING btree (created_at DESC, post_id DESC) INCLUDE (actor_id, kind);

-- index app.assets_owner_id
CREATE INDEX assets_owner_id ON app.assets USING btree (owner_id);

-- index app.blocks_blocked_id
CREATE INDEX blocks_blocked_id ON app.blocks USING btree (blocked_id);

-- index app.comments_parent
CREATE INDEX comments_parent ON app.comments USING btree (parent_id, created_at, id) WHERE (parent_id IS NOT NULL);

-- index app.comments_post_top
CREATE INDEX comments_post_top ON app.comments USING btree (post_id, created_at, id) WHERE (parent_id IS NULL);

-- index app.follows_followee_seq
CREATE INDEX follows_followee_seq ON app.follows USING btree (followee_id, seq DESC);

-- index app.follows_follower_seq
CREATE INDEX follows_follower_seq ON app.follows USING btree (follower_id, seq DESC);

-- index app.hub_activity_recent
CREATE INDEX hub_activity_recent ON app.hub_activity USING btree (hub_id, last_active_at);

-- index app.hub_discussion_messages_author
CREATE INDEX hub_discussion_messages_author ON app.hub_discussion_messages USING btree (author_id);

-- index app.hub_discussion_messages_replies
CREATE INDEX hub_discussion_messages_replies ON app.hub_discussion_messages USING btree (parent_id, created_at, id) WHERE (parent_id IS NOT NULL);

-- index app.hub_discussion_messages_top
CREATE INDEX hub_discussion_messages_top ON app.hub_discussion_messages USING btree (discussion_id, created_at, id) WHERE (parent_id IS NULL);

-- index app.hub_discussions_activity
CREATE INDEX hub_discussions_activity ON app.hub_discussions USING btree (hub_id, last_activity_at DESC, id DESC);

-- index app.hub_invitations_hub
CREATE INDEX hub_invitations_hub ON app.hub_invitations USING btree (hub_id, created_at DESC);

-- index app.hub_invitations_invitee
CREATE INDEX hub_invitations_invitee ON app.hub_invitations USING btree (invitee_id) WHERE (status = 'invited'::app.invitation_status);

-- index app.hub_invitations_invitee_hub
CREATE INDEX hub_invitations_invitee_hub ON app.hub_invitations USING btree (invitee_id, hub_id) WHERE (status = 'invited'::app.invitation_status);

-- index app.hub_invitations_phone_pending
CREATE INDEX hub_invitations_phone_pending ON app.hub_invitations USING btree (phone_e164) WHERE ((invitee_id IS NULL) AND (status = 'invited'::app.invitation_status));

-- index app.hub_join_requests_hub
CREATE INDEX hub_join_requests_hub ON app.hub_join_requests USING btree (hub_id, created_at) WHERE (status = 'pending'::app.join_request_status);

-- index app.hub_join_requests_one_pending
CREATE UNIQUE INDEX hub_join_requests_one_pending ON app.hub_join_requests USING btree (hub_id, user_id) WHERE (status = 'pending'::app.join_request_status);

-- index app.hub_memberships_admins_joined
CREATE INDEX hub_memberships_admins_joined ON app.hub_memberships USING btree (hub_id, joined_at, user_id) WHERE (role = ANY (ARRAY['admin'::app.hub_role, 'super_admin'::app.hub_role]));

-- index app.hub_memberships_joined
CREATE INDEX hub_memberships_joined ON app.hub_memberships USING btree (hub_id, joined_at, user_id);

-- index app.hub_memberships_user_id
CREATE INDEX hub_memberships_user_id ON app.hub_memberships USING btree (user_id);

-- index app.hub_name_words_word
CREATE INDEX hub_name_words_word ON app.hub_name_words USING btree (word, hub_id);

-- index app.hub_profiles_profile_asset_id
CREATE INDEX hub_profiles_profile_asset_id ON app.hub_profiles USING btree (profile_asset_id);

-- index app.hubs_name_search
CREATE INDEX hubs_name_search ON app.hubs USING gin (app.search_text(name) public.gin_trgm_ops);

-- index app.hubs_profile_asset_id
CREATE INDEX hubs_profile_asset_id ON app.hubs USING btree (profile_asset_id);

-- index app.hubs_recommended
CREATE INDEX hubs_recommended ON app.hubs USING btree (name) WHERE is_recommended;

-- index app.moderation_log_newest
CREATE INDEX moderation_log_newest ON app.moderation_log USING btree (created_at DESC, id DESC);

-- index app.notifications_fanout_once
CREATE UNIQUE INDEX notifications_fanout_once ON app.notifications USING btree (fanout_key, recipient_id) WHERE (fanout_key IS NOT NULL);

-- index app.notifications_global_reposts
CREATE INDEX notifications_global_reposts ON app.notifications USING btree (post_id) WHERE ((type = 'post_reposted'::app.notification_type) AND (hub_id IS NULL));

-- index app.notifications_recipient_scope_created
CREATE INDEX notifications_recipient_scope_created ON app.notifications USING btree (recipient_id, COALESCE(hub_id, '00000000-0000-0000-0000-000000000000'::uuid), created_at DESC, id DESC);

-- index app.notifications_recipient_scope_unread
CREATE INDEX notifications_recipient_scope_unread ON app.notifications USING btree (recipient_id, COALESCE(hub_id, '00000000-0000-0000-0000-000000000000'::uuid), created_at DESC, id DESC) WHERE (read_at IS NULL);

-- index app.notifications_recipient_tx
CREATE INDEX notifications_recipient_tx ON app.notifications USING btree (recipient_id, tx_id, id);

-- index app.notifications_tx_id
CREATE INDEX notifications_tx_id ON app.notifications USING btree (tx_id);

-- index app.post_hubs_hub
CREATE INDEX post_hubs_hub ON app.post_hubs USING btree (hub_id, created_at DESC);

-- index app.post_hubs_hub_targets
CREATE INDEX post_hubs_hub_targets ON app.post_hubs USING btree (hub_id, created_at DESC, post_id DESC) WHERE (kind = 'target'::app.post_hub_kind);

-- index app.post_shares_post
CREATE INDEX post_shares_post ON app.post_shares USING btree (post_id);

-- index app.post_shares_user
CREATE INDEX post_shares_user ON app.post_shares USING btree (user_id, created_at DESC);

-- index app.posts_author_time
CREATE INDEX posts_author_time ON app.posts USING btree (author_id, created_at DESC, id DESC) INCLUDE (visibility, deleted_at);

-- index app.posts_source
CREATE INDEX posts_source ON app.posts USING btree (source_post_id, created_at DESC) WHERE (source_post_id IS NOT NULL);

-- index app.posts_time
CREATE INDEX posts_time ON app.posts USING btree (created_at DESC, id DESC) INCLUDE (author_id, visibility, deleted_at);

-- index app.push_devices_session
CREATE INDEX push_devices_session ON app.push_devices USING btree (session_id);

-- index app.push_devices_user
CREATE INDEX push_devices_user ON app.push_devices USING btree (user_id, last_seen_at DESC);

-- index app.reports_one_open
CREATE UNIQUE INDEX reports_one_open ON app.reports USING btree (reporter_id, target_type, target_id) WHERE (state = 'open'::app.report_state);

-- index app.reports_open_targets
CREATE INDEX reports_open_targets ON app.reports USING btree (target_type, target_id, created_at) WHERE (state = 'open'::app.report_state);

-- index app.reports_target
CREATE INDEX reports_target ON app.reports USING btree (target_type, target_id);

-- index app.saved_discussions_recent
CREATE INDEX saved_discussions_recent ON app.saved_discussions USING btree (user_id, saved_at DESC, discussion_id DESC);

-- index app.saved_posts_recent
CREATE INDEX saved_posts_recent ON app.saved_posts USING btree (user_id, saved_at DESC, post_id);

-- index app.sessions_user_id
CREATE INDEX sessions_user_id ON app.sessions USING btree (user_id);

-- index app.upload_intents_owner_id
CREATE INDEX upload_intents_owner_id ON app.upload_intents USING btree (owner_id);

-- index app.upload_intents_pending_expiry
CREATE INDEX upload_intents_pending_expiry ON app.upload_intents USING btree (expires_at) WHERE (completed_at IS NULL);

-- index app.user_name_words_word
CREATE INDEX user_name_words_word ON app.user_name_words USING btree (word, user_id);

-- index app.users_full_name_search
CREATE INDEX users_full_name_search ON app.users USING gin (app.search_text(full_name) public.gin_trgm_ops);

-- index app.users_profile_asset_id
CREATE INDEX users_profile_asset_id ON app.users USING btree (profile_asset_id);

-- index app.users_username_key
CREATE UNIQUE INDEX users_username_key ON app.users USING btree (username);

-- index app.users_username_prefix
CREATE INDEX users_username_prefix ON app.users USING btree (username text_pattern_ops);

-- index app.vote_receipts_user
CREATE INDEX vote_receipts_user ON app.vote_receipts USING btree (user_id, voted_at DESC);

-- index app_private.badge_changes_tx_id
CREATE INDEX badge_changes_tx_id ON app_private.badge_changes USING btree (tx_id);

-- index app_private.data_exports_user
CREATE INDEX data_exports_user ON app_private.data_exports USING btree (user_id, requested_at DESC);

-- index app_private.hidden_rows_user
CREATE INDEX hidden_rows_user ON app_private.hidden_rows USING btree (user_id, kind);

-- index app_private.hub_list_entries_page
CREATE INDEX hub_list_entries_page ON app_private.hub_list_entries USING btree (user_id, activity_at DESC, hub_id DESC);

-- index app_private.hub_list_propagations_due
CREATE INDEX hub_list_propagations_due ON app_private.hub_list_propagations USING btree (not_before) WHERE (queued OR (target_at IS NOT NULL));

-- index app_private.push_deliveries_badge
CREATE UNIQUE INDEX push_deliveries_badge ON app_private.push_deliveries USING btree (badge_change_id, device_id) WHERE (badge_change_id IS NOT NULL);

-- index app_private.push_deliveries_device
CREATE INDEX push_deliveries_device ON app_private.push_deliveries USING btree (device_id);

-- index app_private.push_deliveries_due
CREATE INDEX push_deliveries_due ON app_private.push_deliveries USING btree (next_attempt_at) WHERE (state = 'pending'::app_private.push_state);

-- index app_private.push_deliveries_finished
CREATE INDEX push_deliveries_finished ON app_private.push_deliveries USING btree (finished_at) WHERE (state <> 'pending'::app_private.push_state);

-- index app_private.push_deliveries_notification
CREATE UNIQUE INDEX push_deliveries_notification ON app_private.push_deliveries USING btree (notification_id, device_id) WHERE (notification_id IS NOT NULL);

-- index app_private.refresh_tokens_session_id
CREATE INDEX refresh_tokens_session_id ON app_private.refresh_tokens USING btree (session_id);

-- index app_private.sealed_ballots_scope
CREATE INDEX sealed_ballots_scope ON app_private.sealed_ballots USING btree (post_id, hub_id);

-- index app_private.worker_heartbeats_seen_at
CREATE INDEX worker_heartbeats_seen_at ON app_private.worker_heartbeats USING btree (seen_at);

-- fk constraint app.activity_events activity_events_actor_id_fkey
ALTER TABLE ONLY app.activity_events
    ADD CONSTRAINT activity_events_actor_id_fkey FOREIGN KEY (actor_id) REFERENCES app.users(id);

-- fk constraint app.activity_events activity_events_hub_id_fkey
ALTER TABLE ONLY app.activity_events
    ADD CONSTRAINT activity_events_hub_id_fkey FOREIGN KEY (hub_id) REFERENCES app.hubs(id);

-- fk constraint app.activity_events activity_events_post_id_fkey
ALTER TABLE ONLY app.activity_events
    ADD CONSTRAINT activity_events_post_id_fkey FOREIGN KEY (post_id) REFERENCES app.posts(id);

-- fk constraint app.articles articles_created_by_fkey
ALTER TABLE ONLY app.articles
    ADD CONSTRAINT articles_created_by_fkey FOREIGN KEY (created_by) REFERENCES app.users(id);

-- fk constraint app.assets assets_owner_id_fkey
ALTER TABLE ONLY app.assets
    ADD CONSTRAINT assets_owner_id_fkey FOREIGN KEY (owner_id) REFERENCES app.users(id);

-- fk constraint app.assets assets_upload_id_fkey
ALTER TABLE ONLY app.assets
    ADD CONSTRAINT assets_upload_id_fkey FOREIGN KEY (upload_id) REFERENCES app.upload_intents(id);

-- fk constraint app.blocks blocks_blocked_id_fkey
ALTER TABLE ONLY app.blocks
    ADD CONSTRAINT blocks_blocked_id_fkey FOREIGN KEY (blocked_id) REFERENCES app.users(id);

-- fk constraint app.blocks blocks_blocker_id_fkey
ALTER TABLE ONLY app.blocks
    ADD CONSTRAINT blocks_blocker_id_fkey FOREIGN KEY (blocker_id) REFERENCES app.users(id);

-- fk constraint app.comments comments_author_id_fkey
ALTER TABLE ONLY app.comments
    ADD CONSTRAINT comments_author_id_fkey FOREIGN KEY (author_id) REFERENCES app.users(id);

-- fk constraint app.comments comments_parent_id_fkey
ALTER TABLE ONLY app.comments
    ADD CONSTRAINT comments_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES app.comments(id);

-- fk constraint app.comments comments_post_id_fkey
ALTER TABLE ONLY app.comments
    ADD CONSTRAINT comments_post_id_fkey FOREIGN KEY (post_id) REFERENCES app.posts(id);

-- fk constraint app.default_feed_users default_feed_users_user_id_fkey
ALTER TABLE ONLY app.default_feed_users
    ADD CONSTRAINT default_feed_users_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.follows follows_followee_id_fkey
ALTER TABLE ONLY app.follows
    ADD CONSTRAINT follows_followee_id_fkey FOREIGN KEY (followee_id) REFERENCES app.users(id);

-- fk constraint app.follows follows_follower_id_fkey
ALTER TABLE ONLY app.follows
    ADD CONSTRAINT follows_follower_id_fkey FOREIGN KEY (follower_id) REFERENCES app.users(id);

-- fk constraint app.hub_discussion_messages hub_discussion_messages_author_id_fkey
ALTER TABLE ONLY app.hub_discussion_messages
    ADD CONSTRAINT hub_discussion_messages_author_id_fkey FOREIGN KEY (author_id) REFERENCES app.users(id) ON DELETE SET NULL;

-- fk constraint app.hub_discussion_messages hub_discussion_messages_discussion_id_hub_id_fkey
ALTER TABLE ONLY app.hub_discussion_messages
    ADD CONSTRAINT hub_discussion_messages_discussion_id_hub_id_fkey FOREIGN KEY (discussion_id, hub_id) REFERENCES app.hub_discussions(id, hub_id);

-- fk constraint app.hub_discussion_messages hub_discussion_messages_parent_id_fkey
ALTER TABLE ONLY app.hub_discussion_messages
    ADD CONSTRAINT hub_discussion_messages_parent_id_fkey FOREIGN KEY (parent_id) REFERENCES app.hub_discussion_messages(id);

-- fk constraint app.hub_discussion_stats hub_discussion_stats_discussion_id_hub_id_fkey
ALTER TABLE ONLY app.hub_discussion_stats
    ADD CONSTRAINT hub_discussion_stats_discussion_id_hub_id_fkey FOREIGN KEY (discussion_id, hub_id) REFERENCES app.hub_discussions(id, hub_id);

-- fk constraint app.hub_discussions hub_discussions_hub_id_fkey
ALTER TABLE ONLY app.hub_discussions
    ADD CONSTRAINT hub_discussions_hub_id_fkey FOREIGN KEY (hub_id) REFERENCES app.hubs(id);

-- fk constraint app.hub_discussions hub_discussions_post_id_fkey
ALTER TABLE ONLY app.hub_discussions
    ADD CONSTRAINT hub_discussions_post_id_fkey FOREIGN KEY (post_id) REFERENCES app.posts(id);

-- fk constraint app.hub_invitations hub_invitations_hub_id_fkey
ALTER TABLE ONLY app.hub_invitations
    ADD CONSTRAINT hub_invitations_hub_id_fkey FOREIGN KEY (hub_id) REFERENCES app.hubs(id);

-- fk constraint app.hub_invitations hub_invitations_invited_by_fkey
ALTER TABLE ONLY app.hub_invitations
    ADD CONSTRAINT hub_invitations_invited_by_fkey FOREIGN KEY (invited_by) REFERENCES app.users(id);

-- fk constraint app.hub_invitations hub_invitations_invitee_id_fkey
ALTER TABLE ONLY app.hub_invitations
    ADD CONSTRAINT hub_invitations_invitee_id_fkey FOREIGN KEY (invitee_id) REFERENCES app.users(id);

-- fk constraint app.hub_invite_links hub_invite_links_created_by_fkey
ALTER TABLE ONLY app.hub_invite_links
    ADD CONSTRAINT hub_invite_links_created_by_fkey FOREIGN KEY (created_by) REFERENCES app.users(id);

-- fk constraint app.hub_invite_links hub_invite_links_hub_id_fkey
ALTER TABLE ONLY app.hub_invite_links
    ADD CONSTRAINT hub_invite_links_hub_id_fkey FOREIGN KEY (hub_id) REFERENCES app.hubs(id);

-- fk constraint app.hub_join_requests hub_join_requests_decided_by_fkey
ALTER TABLE ONLY app.hub_join_requests
    ADD CONSTRAINT hub_join_requests_decided_by_fkey FOREIGN KEY (decided_by) REFERENCES app.users(id);

-- fk constraint app.hub_join_requests hub_join_requests_hub_id_fkey
ALTER TABLE ONLY app.hub_join_requests
    ADD CONSTRAINT hub_join_requests_hub_id_fkey FOREIGN KEY (hub_id) REFERENCES app.hubs(id);

-- fk constraint app.hub_join_requests hub_join_requests_invitation_id_fkey
ALTER TABLE ONLY app.hub_join_requests
    ADD CONSTRAINT hub_join_requests_invitation_id_fkey FOREIGN KEY (invitation_id) REFERENCES app.hub_invitations(id);

-- fk constraint app.hub_join_requests hub_join_requests_invite_link_id_fkey
ALTER TABLE ONLY app.hub_join_requests
    ADD CONSTRAINT hub_join_requests_invite_link_id_fkey FOREIGN KEY (invite_link_id) REFERENCES app.hub_invite_links(id);

-- fk constraint app.hub_join_requests hub_join_requests_user_id_fkey
ALTER TABLE ONLY app.hub_join_requests
    ADD CONSTRAINT hub_join_requests_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.hub_memberships hub_memberships_hub_id_fkey
ALTER TABLE ONLY app.hub_memberships
    ADD CONSTRAINT hub_memberships_hub_id_fkey FOREIGN KEY (hub_id) REFERENCES app.hubs(id);

-- fk constraint app.hub_memberships hub_memberships_user_id_fkey
ALTER TABLE ONLY app.hub_memberships
    ADD CONSTRAINT hub_memberships_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.hub_name_words hub_name_words_hub_id_fkey
ALTER TABLE ONLY app.hub_name_words
    ADD CONSTRAINT hub_name_words_hub_id_fkey FOREIGN KEY (hub_id) REFERENCES app.hubs(id) ON DELETE CASCADE;

-- fk constraint app.hub_profiles hub_profiles_profile_asset_id_fkey
ALTER TABLE ONLY app.hub_profiles
    ADD CONSTRAINT hub_profiles_profile_asset_id_fkey FOREIGN KEY (profile_asset_id) REFERENCES app.assets(id);

-- fk constraint app.hub_profiles hub_profiles_user_id_fkey
ALTER TABLE ONLY app.hub_profiles
    ADD CONSTRAINT hub_profiles_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.hubs hubs_created_by_fkey
ALTER TABLE ONLY app.hubs
    ADD CONSTRAINT hubs_created_by_fkey FOREIGN KEY (created_by) REFERENCES app.users(id);

-- fk constraint app.hubs hubs_profile_asset_id_fkey
ALTER TABLE ONLY app.hubs
    ADD CONSTRAINT hubs_profile_asset_id_fkey FOREIGN KEY (profile_asset_id) REFERENCES app.assets(id);

-- fk constraint app.notifications notifications_actor_id_fkey
ALTER TABLE ONLY app.notifications
    ADD CONSTRAINT notifications_actor_id_fkey FOREIGN KEY (actor_id) REFERENCES app.users(id);

-- fk constraint app.phone_identities phone_identities_user_id_fkey
ALTER TABLE ONLY app.phone_identities
    ADD CONSTRAINT phone_identities_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.post_hubs post_hubs_added_by_fkey
ALTER TABLE ONLY app.post_hubs
    ADD CONSTRAINT post_hubs_added_by_fkey FOREIGN KEY (added_by) REFERENCES app.users(id);

-- fk constraint app.post_hubs post_hubs_hub_id_fkey
ALTER TABLE ONLY app.post_hubs
    ADD CONSTRAINT post_hubs_hub_id_fkey FOREIGN KEY (hub_id) REFERENCES app.hubs(id);

-- fk constraint app.post_hubs post_hubs_post_id_fkey
ALTER TABLE ONLY app.post_hubs
    ADD CONSTRAINT post_hubs_post_id_fkey FOREIGN KEY (post_id) REFERENCES app.posts(id);

-- fk constraint app.post_shares post_shares_post_id_fkey
ALTER TABLE ONLY app.post_shares
    ADD CONSTRAINT post_shares_post_id_fkey FOREIGN KEY (post_id) REFERENCES app.posts(id);

-- fk constraint app.post_shares post_shares_user_id_fkey
ALTER TABLE ONLY app.post_shares
    ADD CONSTRAINT post_shares_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.posts posts_article_id_fkey
ALTER TABLE ONLY app.posts
    ADD CONSTRAINT posts_article_id_fkey FOREIGN KEY (article_id) REFERENCES app.articles(id);

-- fk constraint app.posts posts_author_id_fkey
ALTER TABLE ONLY app.posts
    ADD CONSTRAINT posts_author_id_fkey FOREIGN KEY (author_id) REFERENCES app.users(id);

-- fk constraint app.posts posts_source_post_id_fkey
ALTER TABLE ONLY app.posts
    ADD CONSTRAINT posts_source_post_id_fkey FOREIGN KEY (source_post_id) REFERENCES app.posts(id);

-- fk constraint app.push_devices push_devices_session_id_fkey
ALTER TABLE ONLY app.push_devices
    ADD CONSTRAINT push_devices_session_id_fkey FOREIGN KEY (session_id) REFERENCES app.sessions(id) ON DELETE CASCADE;

-- fk constraint app.push_devices push_devices_user_id_fkey
ALTER TABLE ONLY app.push_devices
    ADD CONSTRAINT push_devices_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.reports reports_reporter_id_fkey
ALTER TABLE ONLY app.reports
    ADD CONSTRAINT reports_reporter_id_fkey FOREIGN KEY (reporter_id) REFERENCES app.users(id) ON DELETE SET NULL;

-- fk constraint app.saved_discussions saved_discussions_discussion_id_hub_id_fkey
ALTER TABLE ONLY app.saved_discussions
    ADD CONSTRAINT saved_discussions_discussion_id_hub_id_fkey FOREIGN KEY (discussion_id, hub_id) REFERENCES app.hub_discussions(id, hub_id);

-- fk constraint app.saved_discussions saved_discussions_user_id_fkey
ALTER TABLE ONLY app.saved_discussions
    ADD CONSTRAINT saved_discussions_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.saved_posts saved_posts_post_id_fkey
ALTER TABLE ONLY app.saved_posts
    ADD CONSTRAINT saved_posts_post_id_fkey FOREIGN KEY (post_id) REFERENCES app.posts(id);

-- fk constraint app.saved_posts saved_posts_user_id_fkey
ALTER TABLE ONLY app.saved_posts
    ADD CONSTRAINT saved_posts_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.sessions sessions_user_id_fkey
ALTER TABLE ONLY app.sessions
    ADD CONSTRAINT sessions_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app.upload_intents upload_intents_owner_id_fkey
ALTER TABLE ONLY app.upload_intents
    ADD CONSTRAINT upload_intents_owner_id_fkey FOREIGN KEY (owner_id) REFERENCES app.users(id);

-- fk constraint app.user_name_words user_name_words_user_id_fkey
ALTER TABLE ONLY app.user_name_words
    ADD CONSTRAINT user_name_words_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id) ON DELETE CASCADE;

-- fk constraint app.users users_merged_into_fkey
ALTER TABLE ONLY app.users
    ADD CONSTRAINT users_merged_into_fkey FOREIGN KEY (merged_into) REFERENCES app.users(id);

-- fk constraint app.users users_profile_asset_id_fkey
ALTER TABLE ONLY app.users
    ADD CONSTRAINT users_profile_asset_id_fkey FOREIGN KEY (profile_asset_id) REFERENCES app.assets(id);

-- fk constraint app.vote_counters vote_counters_hub_id_fkey1
ALTER TABLE ONLY app.vote_counters
    ADD CONSTRAINT vote_counters_hub_id_fkey1 FOREIGN KEY (hub_id) REFERENCES app.hubs(id);

-- fk constraint app.vote_counters vote_counters_post_id_fkey1
ALTER TABLE ONLY app.vote_counters
    ADD CONSTRAINT vote_counters_post_id_fkey1 FOREIGN KEY (post_id) REFERENCES app.posts(id);

-- fk constraint app_private.account_states account_states_user_id_fkey
ALTER TABLE ONLY app_private.account_states
    ADD CONSTRAINT account_states_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app_private.anonymous_devices anonymous_devices_user_id_fkey
ALTER TABLE ONLY app_private.anonymous_devices
    ADD CONSTRAINT anonymous_devices_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app_private.data_exports data_exports_user_id_fkey
ALTER TABLE ONLY app_private.data_exports
    ADD CONSTRAINT data_exports_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app_private.hidden_rows hidden_rows_user_id_fkey
ALTER TABLE ONLY app_private.hidden_rows
    ADD CONSTRAINT hidden_rows_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app_private.idp_subjects idp_subjects_user_id_fkey
ALTER TABLE ONLY app_private.idp_subjects
    ADD CONSTRAINT idp_subjects_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app_private.notification_settings notification_settings_user_id_fkey
ALTER TABLE ONLY app_private.notification_settings
    ADD CONSTRAINT notification_settings_user_id_fkey FOREIGN KEY (user_id) REFERENCES app.users(id);

-- fk constraint app_private.push_deliveries push_deliveries_badge_change_id_fkey
ALTER TABLE ONLY app_private.push_deliveries
    ADD CONSTRAINT push_deliveries_badge_change_id_fkey FOREIGN KEY (badge_change_id) REFERENCES app_private.badge_changes(id) ON DELETE CASCADE;

-- fk constraint app_private.push_deliveries push_deliveries_device_id_fkey
ALTER TABLE ONLY app_private.push_deliveries
    ADD CONSTRAINT push_deliveries_device_id_fkey FOREIGN KEY (device_id) REFERENCES app.push_devices(id) ON DELETE CASCADE;

-- fk constraint app_private.push_deliveries push_deliveries_notification_id_fkey
ALTER TABLE ONLY app_private.push_deliveries
    ADD CONSTRAINT push_deliveries_notification_id_fkey FOREIGN KEY (notification_id) REFERENCES app.notifications(id) ON DELETE CASCADE;

-- fk constraint app_private.refresh_tokens refresh_tokens_session_id_fkey
ALTER TABLE ONLY app_private.refresh_tokens
    ADD CONSTRAINT refresh_tokens_session_id_fkey FOREIGN KEY (session_id) REFERENCES app.sessions(id);

-- fk constraint app_private.removed_posts removed_posts_post_id_fkey
ALTER TABLE ONLY app_private.removed_posts
    ADD CONSTRAINT removed_posts_post_id_fkey FOREIGN KEY (post_id) REFERENCES app.posts(id);

-- row security app.activity_events
ALTER TABLE app.activity_events ENABLE ROW LEVEL SECURITY;

-- row security app.articles
ALTER TABLE app.articles ENABLE ROW LEVEL SECURITY;

-- row security app.assets
ALTER TABLE app.assets ENABLE ROW LEVEL SECURITY;

-- row security app.blocks
ALTER TABLE app.blocks ENABLE ROW LEVEL SECURITY;

-- row security app.comments
ALTER TABLE app.comments ENABLE ROW LEVEL SECURITY;

-- row security app.default_feed_users
ALTER TABLE app.default_feed_users ENABLE ROW LEVEL SECURITY;

-- row security app.follows
ALTER TABLE app.follows ENABLE ROW LEVEL SECURITY;

-- row security app.hub_activity
ALTER TABLE app.hub_activity ENABLE ROW LEVEL SECURITY;

-- row security app.hub_discussion_messages
ALTER TABLE app.hub_discussion_messages ENABLE ROW LEVEL SECURITY;

-- row security app.hub_discussion_stats
ALTER TABLE app.hub_discussion_stats ENABLE ROW LEVEL SECURITY;

-- row security app.hub_discussions
ALTER TABLE app.hub_discussions ENABLE ROW LEVEL SECURITY;

-- row security app.hub_invitations
ALTER TABLE app.hub_invitations ENABLE ROW LEVEL SECURITY;

-- row security app.hub_invite_links
ALTER TABLE app.hub_invite_links ENABLE ROW LEVEL SECURITY;

-- row security app.hub_join_requests
ALTER TABLE app.hub_join_requests ENABLE ROW LEVEL SECURITY;

-- row security app.hub_memberships
ALTER TABLE app.hub_memberships ENABLE ROW LEVEL SECURITY;

-- row security app.hub_name_words
ALTER TABLE app.hub_name_words ENABLE ROW LEVEL SECURITY;

-- row security app.hub_profiles
ALTER TABLE app.hub_profiles ENABLE ROW LEVEL SECURITY;

-- row security app.hubs
ALTER TABLE app.hubs ENABLE ROW LEVEL SECURITY;

-- row security app.moderation_log
ALTER TABLE app.moderation_log ENABLE ROW LEVEL SECURITY;

-- row security app.notifications
ALTER TABLE app.notifications ENABLE ROW LEVEL SECURITY;

-- row security app.phone_identities
ALTER TABLE app.phone_identities ENABLE ROW LEVEL SECURITY;

-- row security app.post_hubs
ALTER TABLE app.post_hubs ENABLE ROW LEVEL SECURITY;

-- row security app.post_shares
ALTER TABLE app.post_shares ENABLE ROW LEVEL SECURITY;

-- row security app.posts
ALTER TABLE app.posts ENABLE ROW LEVEL SECURITY;

-- row security app.push_devices
ALTER TABLE app.push_devices ENABLE ROW LEVEL SECURITY;

-- row security app.reports
ALTER TABLE app.reports ENABLE ROW LEVEL SECURITY;

-- row security app.saved_discussions
ALTER TABLE app.saved_discussions ENABLE ROW LEVEL SECURITY;

-- row security app.saved_posts
ALTER TABLE app.saved_posts ENABLE ROW LEVEL SECURITY;

-- row security app.sessions
ALTER TABLE app.sessions ENABLE ROW LEVEL SECURITY;

-- row security app.upload_intents
ALTER TABLE app.upload_intents ENABLE ROW LEVEL SECURITY;

-- row security app.user_name_words
ALTER TABLE app.user_name_words ENABLE ROW LEVEL SECURITY;

-- row security app.users
ALTER TABLE app.users ENABLE ROW LEVEL SECURITY;

-- row security app.vote_counters
ALTER TABLE app.vote_counters ENABLE ROW LEVEL SECURITY;

-- row security app.vote_receipts
ALTER TABLE app.vote_receipts ENABLE ROW LEVEL SECURITY;

-- row security app.vote_scope_receipts
ALTER TABLE app.vote_scope_receipts ENABLE ROW LEVEL SECURITY;

-- row security app_private.hub_list_entries
ALTER TABLE app_private.hub_list_entries ENABLE ROW LEVEL SECURITY;

-- row security app_private.hub_list_propagations
ALTER TABLE app_private.hub_list_propagations ENABLE ROW LEVEL SECURITY;

-- row security app_private.sealed_ballots
ALTER TABLE app_private.sealed_ballots ENABLE ROW LEVEL SECURITY;

-- The rows the chain inserted.
insert into app.reserved_handles (handle) values
  ('admin'), ('api'), ('support'), ('root'), ('me'), ('null'), ('administrator'), ('help'),
  ('system'), ('moderator'), ('staff'), ('official'), ('undefined'), ('anonymous'), ('settings');
insert into app_private.notification_dispatch (dispatched_to) values (pg_snapshot_xmin(pg_current_snapshot()));
insert into app_private.push_cursor (pushed_to) values (pg_snapshot_xmin(pg_current_snapshot()));
