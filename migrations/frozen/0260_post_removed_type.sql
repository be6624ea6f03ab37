-- Up Migration
-- The notification a post's author gets when internal tooling removes the post (contract 14). In a
-- file of its own: a new enum value cannot be used in the transaction that adds it.
alter type app.notification_type add value 'post_removed';

-- Down Migration
-- PostgreSQL cannot drop an enum value; the value stays (nothing uses it once 0262 is down).
