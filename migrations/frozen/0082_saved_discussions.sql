-- Up Migration
-- Saved discussions (spec 2.5; contract section 8): saved from a hub discussion, by an active
-- member of its hub. Separate from the saved-post bookmarks (0055). A saved row outlives the
-- membership: it is hidden while the user is not an active member and shown again on rejoining.
create table app.saved_discussions (
  user_id uuid not null references app.users (id),
  discussion_id uuid not null,
  hub_id uuid not null,
  saved_at timestamptz not null default now(),
  primary key (user_id, discussion_id),
  foreign key (discussion_id, hub_id) references app.hub_discussions (id, hub_id)
);
create index saved_discussions_recent on app.saved_discussions (user_id, saved_at desc, discussion_id desc);

alter table app.saved_discussions enable row level security;
alter table app.saved_discussions force row level security;

-- A user reads, saves and unsaves only their own rows, and only in hubs where they are an active
-- member now (GET /users/me/saved-discussions omits the others).
create policy saved_discussions_select_own on app.saved_discussions for select to app_user
  using (user_id = (select app.viewer_id()) and hub_id = any ((select app.viewer_active_hub_ids())::uuid[]));
create policy saved_discussions_insert_own on app.saved_discussions for insert to app_user
  with check (user_id = (select app.viewer_id()) and hub_id = any ((select app.viewer_active_hub_ids())::uuid[]));
create policy saved_discussions_delete_own on app.saved_discussions for delete to app_user
  using (user_id = (select app.viewer_id()) and hub_id = any ((select app.viewer_active_hub_ids())::uuid[]));

grant select (user_id, discussion_id, hub_id, saved_at), insert (user_id, discussion_id, hub_id), delete
  on app.saved_discussions to app_user;

-- POST and DELETE /hubs/{hubId}/discussions/{discussionId}/save: the discussion check of
-- app.hub_discussion_thread (HUB_NOT_FOUND, HUB_MEMBERSHIP_REQUIRED, DISCUSSION_NOT_FOUND), then the
-- write under the policies above. Both are idempotent. They run with the caller's rights.
create function app.save_hub_discussion(p_hub_id uuid, p_discussion_id uuid, p_saved boolean)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
begin
  perform app.hub_discussion_thread(p_hub_id, p_discussion_id);
  if p_saved then
    insert into app.saved_discussions (user_id, discussion_id, hub_id) values (app.viewer_id(), p_discussion_id, p_hub_id)
      on conflict do nothing;
  else
    delete from app.saved_discussions where user_id = app.viewer_id() and discussion_id = p_discussion_id;
  end if;
end
$$;

grant execute on function app.save_hub_discussion(uuid, uuid, boolean) to app_user;

-- Down Migration
drop function app.save_hub_discussion(uuid, uuid, boolean);
drop table app.saved_discussions;
