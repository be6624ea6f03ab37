-- Up Migration
-- The block rule in one place: the viewer's block list (used by the post, comment, user and
-- follow policies) is app.user_block_list (0100, used by live delivery for each recipient) applied
-- to the viewer. 0105 had restated the rule's query here when it moved the helpers to PL/pgSQL.
create or replace function app.viewer_block_list()
  returns uuid[]
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return app.user_block_list(app.viewer_id());
end
$$;

-- Down Migration
create or replace function app.viewer_block_list()
  returns uuid[]
  language plpgsql stable security definer
  set search_path = pg_catalog
  as $$
begin
  return (
    select coalesce(array_agg(other), '{}') from (
      select b.blocked_id as other from app.blocks b where b.blocker_id = app.viewer_id()
      union
      select b.blocker_id from app.blocks b where b.blocked_id = app.viewer_id()) pairs);
end
$$;
