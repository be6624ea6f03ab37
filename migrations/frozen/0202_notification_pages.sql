-- Up Migration
-- A page of GET /notifications at the cost of the page, however many rows the user has (1,000,000)
-- and however many of them are hidden. One index scan over all of a user's rows, filtered by the
-- visibility policy row by row, reads every hidden row between two visible ones: the rows of a hub
-- the user left (kept, spec 6.3.3), and with unreadOnly every read row too.
--
-- Now a page is merged from one index range per scope the viewer may see (0200): the rows without a
-- hub, and the rows of each hub the viewer is an active member of, each range read newest first up
-- to the page size, on an index by (recipient, hub, time) that keeps the unread rows apart as well.
-- The cost is the page times the viewer's visible scopes, whatever lies in the others. Rows without
-- a hub are still tested one by one (a global post_reposted row follows its repost, rule 4): only
-- the rows of deleted reposts can be skipped there.

-- The scope of a row in the index is coalesce(hub_id, nil uuid): an equality on it (IS NULL is not
-- one) lets a range be read in the index's order, newest first, and stop at the page size.
create index notifications_recipient_scope_created
  on app.notifications (recipient_id, coalesce(hub_id, '00000000-0000-0000-0000-000000000000'), created_at desc, id desc);
create index notifications_recipient_scope_unread
  on app.notifications (recipient_id, coalesce(hub_id, '00000000-0000-0000-0000-000000000000'), created_at desc, id desc)
  where read_at is null;
-- Both served only the list and the count (an unread count read through the counters of 0201 now).
drop index app.notifications_recipient_created;
drop index app.notifications_recipient_unread;

-- The rows of one page, for app.notification_page below: SQL, inlined where it is called, so a
-- constant p_unread_only leaves the plan either the unread index or the other. Keyset bound as a row
-- comparison (an index condition: a deep page starts where the cursor points).
create function app_private.notification_page_rows(p_viewer uuid, p_before_at timestamptz, p_before_id uuid,
  p_unread_only boolean, p_limit int)
  returns table (id uuid, created_at timestamptz)
  language sql stable
  as $$
  select page.id, page.created_at
  from (
    (select n.id, n.created_at
     from app.notifications n
     where n.recipient_id = p_viewer and coalesce(n.hub_id, '00000000-0000-0000-0000-000000000000') = '00000000-0000-0000-0000-000000000000'
       and (n.created_at, n.id) < (p_before_at, p_before_id)
       and (not p_unread_only or n.read_at is null)
       and app_private.notification_visible(n, p_viewer)
     order by n.created_at desc, n.id desc
     limit p_limit)
    union all
    (select h.id, h.created_at
     from app.hub_memberships m
     cross join lateral (
       select n.id, n.created_at
       from app.notifications n
       where n.recipient_id = p_viewer and coalesce(n.hub_id, '00000000-0000-0000-0000-000000000000') = m.hub_id
         and (n.created_at, n.id) < (p_before_at, p_before_id)
         and (not p_unread_only or n.read_at is null)
       order by n.created_at desc, n.id desc
       limit p_limit) h
     where m.user_id = p_viewer and app_private.scope_visible('h', m.hub_id, p_viewer))
  ) page
  order by page.created_at desc, page.id desc
  limit p_limit
$$;

revoke all on function app_private.notification_page_rows(uuid, timestamptz, uuid, boolean, int) from public;

-- The ids of the viewer's page, newest first: rows before (p_before_at, p_before_id) (null: the
-- first page), unread only when p_unread_only, at most p_limit, visible to the viewer now. Callers
-- read the rows through app.notification_rows as the viewer (the list's policy applies again).
create function app.notification_page(p_before_at timestamptz, p_before_id uuid, p_unread_only boolean, p_limit int)
  returns table (id uuid, created_at timestamptz)
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
declare
  v_viewer uuid := app.viewer_id();
  v_at timestamptz := coalesce(p_before_at, 'infinity');
  v_id uuid := coalesce(p_before_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff');
begin
  if p_unread_only then
    return query select r.id, r.created_at from app_private.notification_page_rows(v_viewer, v_at, v_id, true, p_limit) r;
  else
    return query select r.id, r.created_at from app_private.notification_page_rows(v_viewer, v_at, v_id, false, p_limit) r;
  end if;
end
$$;

grant execute on function app.notification_page(timestamptz, uuid, boolean, int) to app_user;

-- Down Migration
drop function app.notification_page(timestamptz, uuid, boolean, int);
drop function app_private.notification_page_rows(uuid, timestamptz, uuid, boolean, int);
create index notifications_recipient_unread on app.notifications (recipient_id) where read_at is null;
create index notifications_recipient_created on app.notifications (recipient_id, created_at desc, id desc);
drop index app.notifications_recipient_scope_unread;
drop index app.notifications_recipient_scope_created;
