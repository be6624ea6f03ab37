-- Up Migration
-- Counters for the profile's stats: the votes a user's posts received (stats.votesReceived, read
-- until now as a count of every receipt of every post of the author) and the votes a user cast
-- (stats.votesCast, shown to the owner only). In a file of their own: a new enum value cannot be
-- used in the transaction that adds it; 0321 keeps the counters.
alter type app_private.counter add value 'user_votes_received';
alter type app_private.counter add value 'user_votes_cast';
