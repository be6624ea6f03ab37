#!/bin/sh
# Whether the backups are current (docs/backups.md "Watching"): exit 0 and one line when they are,
# exit 1 and one line per problem when not. The backup container's healthcheck runs it; a monitor
# can run it too (`docker compose exec backup backup-check`). Problems: the stanza's status is not
# ok, no backup, the newest backup older than BACKUP_MAX_AGE_HOURS (default 26), the newest full
# older than FULL_MAX_AGE_HOURS (default 192, 8 days). pgBackRest's own settings apply
# (PGBACKREST_STANZA, PGBACKREST_CONFIG, ...; stanza main by default).
set -u
stanza=${PGBACKREST_STANZA:-main}
max_age=${BACKUP_MAX_AGE_HOURS:-26}
full_max_age=${FULL_MAX_AGE_HOURS:-192}

if ! info=$(pgbackrest --stanza="$stanza" info 2>&1); then
  echo "backup-check: pgbackrest info failed: $(echo "$info" | tail -1)"
  exit 1
fi
problems=0
problem() {
  echo "backup-check: $1"
  problems=$((problems + 1))
}
status=$(echo "$info" | sed -n 's/^ *status: //p' | head -1)
[ "$status" = "ok" ] || problem "stanza $stanza status: $status"

# The age in hours of the newest backup whose header line matches $1 (its stop time), or nothing.
age_hours() {
  stop=$(echo "$info" | grep -A1 -E "^ *($1) backup: " | sed -n 's/^ *timestamp start\/stop: .* \/ //p' | tail -1)
  [ -n "$stop" ] || return 0
  echo $(( ($(date +%s) - $(date -d "$stop" +%s)) / 3600 ))
}
newest=$(age_hours 'full|diff|incr')
full=$(age_hours 'full')
if [ -z "$newest" ]; then
  problem "no backup in the repository"
else
  [ "$newest" -lt "$max_age" ] || problem "the newest backup is ${newest} h old (limit ${max_age} h)"
  [ "$full" -lt "$full_max_age" ] || problem "the newest full backup is ${full} h old (limit ${full_max_age} h)"
fi
[ "$problems" -eq 0 ] || exit 1
echo "backup-check: ok (stanza $stanza, newest backup ${newest} h old, newest full ${full} h old)"
