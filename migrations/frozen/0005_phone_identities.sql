-- Up Migration
-- A verified phone number (E.164), at most one per user and one user per phone. Phone numbers are
-- private: never in a public profile, people search or general comments.
create table app.phone_identities (
  user_id uuid primary key references app.users (id),
  phone_e164 text not null unique,
  verified_at timestamptz not null default now(),
  constraint phone_identities_e164 check (phone_e164 ~ '^\+[1-9][0-9]{6,14}$')
);

alter table app.phone_identities enable row level security;
alter table app.phone_identities force row level security;

-- A user reads their own phone. The hubs migrations widen this to co-members of an active hub.
create policy phone_identities_select_self on app.phone_identities
  for select to app_user
  using (user_id = (select app.viewer_id()));

grant select on app.phone_identities to app_user;

-- Down Migration
drop table app.phone_identities;
