-- Up Migration
-- Triggers are named _NNN_<what>: PostgreSQL fires the triggers of one event on a table in name
-- order, so the number declares the order (db/sql). On a database db/sql was applied to, each
-- trigger is renamed in place and keeps firing; db/sql, applied next, replaces a definition that
-- changed in one transaction per table. A fresh database has no triggers while migrations run
-- (db/sql creates them under these names), so its rows are skipped. Tables are locked in name
-- order, under the runner's lock_timeout (retried whole).
do $$
declare
  v record;
begin
  for v in
    select r.tbl, r.old_name, r.new_name
    from (values
      ('app.comments', 'comments_counted_delete', '_500_count_delete'),
      ('app.comments', 'comments_counted_insert', '_500_count_insert'),
      ('app.comments', 'comments_counted_update', '_500_count_update'),
      ('app.follows', 'follows_counted_delete', '_500_count_delete'),
      ('app.follows', 'follows_counted_insert', '_500_count_insert'),
      ('app.follows', 'follows_counted_update', '_500_count_update'),
      ('app.hub_memberships', 'hub_memberships_counted_delete', '_500_count_delete'),
      ('app.hub_memberships', 'hub_memberships_counted_insert', '_500_count_insert'),
      ('app.hub_memberships', 'hub_memberships_counted_update', '_500_count_update'),
      ('app.posts', 'posts_counted_delete', '_500_count_delete'),
      ('app.posts', 'posts_counted_insert', '_500_count_insert'),
      ('app.posts', 'posts_counted_update', '_500_count_update'),
      ('app.vote_receipts', 'vote_receipts_counted_delete', '_500_count_delete'),
      ('app.vote_receipts', 'vote_receipts_counted_insert', '_500_count_insert'),
      ('app.vote_receipts', 'vote_receipts_counted_update', '_500_count_update')
    ) r (tbl, old_name, new_name)
    where exists (select from pg_catalog.pg_trigger t where t.tgrelid = pg_catalog.to_regclass(r.tbl) and t.tgname = r.old_name)
    order by r.tbl, r.old_name
  loop
    execute pg_catalog.format('alter trigger %I on %s rename to %I', v.old_name, v.tbl, v.new_name);
  end loop;
end
$$;
