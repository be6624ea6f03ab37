-- Up Migration
-- no transaction
-- The page orders of GET /hubs/{hubId}/invitations (newest first) and GET /hubs/{hubId}/join-requests
-- (oldest pending first) end with the id; the indexes they walked did not, so a page sorted what it
-- read. Where the statistics say a hub holds about one invitation (gathered before it held many)
-- the planner read every invitation of the hub and sorted them; an index with the whole order is
-- walked to a page with no sort (app.hub_invitation_page and app.hub_join_request_page in
-- db/sql/hubs.sql; docs/performance.md, "Hot values"). And a viewer's own pending join requests
-- (app.viewer_related_hub_ids, on every member list and hub page) had no index of their own: they
-- were found by a skip scan of (hub_id, user_id), one probe per hub with pending requests, or by
-- reading every pending request of a hub the statistics took for small. Built without blocking
-- writes. hub_invitations_hub and hub_join_requests_hub are listed in db/retired.txt.
create index concurrently if not exists hub_invitations_hub_page on app.hub_invitations (hub_id, created_at desc, id desc);
create index concurrently if not exists hub_join_requests_hub_page on app.hub_join_requests (hub_id, created_at, id) where status = 'pending';
create index concurrently if not exists hub_join_requests_user_pending on app.hub_join_requests (user_id) where status = 'pending';
