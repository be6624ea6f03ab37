-- Up Migration
-- Kept answers of requests sent with an Idempotency-Key (contract part 15): one row per user and
-- key, written in the same transaction as the request's effect, so a retry after a crash either
-- finds the answer or finds that nothing happened. What a row holds is unreadable without the
-- client's key (server/http/idempotency.ts): the key itself is not stored, only a digest derived
-- from it and the user; the fingerprint of method, path and body is an HMAC under a key derived
-- from it; the answer's body is AES-256-GCM ciphertext under another (a vote's answer shows the
-- tally right after the vote). Functions in db/sql/sessions.sql.
create table app_private.idempotent_answers (
  user_id uuid not null references app.users (id) on delete cascade,
  key_digest bytea not null,
  fingerprint bytea not null,
  status smallint not null,
  headers jsonb not null,
  body bytea not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (user_id, key_digest)
);
comment on table app_private.idempotent_answers is
  'Kept answers of requests with an Idempotency-Key (0360), 24 hours: key digest, fingerprint HMAC, status, kept headers and the encrypted body; swept by the worker task purge_idempotent_answers, deleted with the account''s purge.';
create index idempotent_answers_expiry on app_private.idempotent_answers (expires_at);
alter table app_private.idempotent_answers enable row level security;
alter table app_private.idempotent_answers force row level security;
