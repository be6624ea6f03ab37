-- Up Migration
-- Merging an anonymous caller into an existing phone identity (contract section 3, OTP verify).
-- Each feature that stores public activity (follows, blocks, saved posts, votes, comments) registers
-- one step here: a function (source uuid, target uuid) returns void that moves its own rows.
-- merge_user runs the steps in order, then retires the source user. One transaction, one function.
create table app_private.user_merge_steps (
  position int primary key,
  step regprocedure not null unique
);

create function app_private.merge_user(p_source uuid, p_target uuid)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog
  as $$
declare
  v_step regprocedure;
begin
  for v_step in select s.step from app_private.user_merge_steps s order by s.position loop
    execute format('select %s($1, $2)', v_step::regproc) using p_source, p_target;
  end loop;
  update app.users set merged_into = p_target where id = p_source;
  update app.sessions set revoked_at = now() where user_id = p_source and revoked_at is null;
end
$$;

-- Down Migration
drop function app_private.merge_user(uuid, uuid);
drop table app_private.user_merge_steps;
