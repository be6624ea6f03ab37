#!/bin/sh
# The backup container's schedule (docs/backups.md). Creates the stanza when the repository has
# none (it waits for PostgreSQL), takes a full backup when the repository holds no backup, then
# once a day at BACKUP_HOUR:00 UTC (default 1) takes a full backup on BACKUP_FULL_WEEKDAY (1-7,
# Monday is 1; default 7) and a differential on the other days. pgBackRest expires what the
# retention settings (pgbackrest.conf) no longer keep after each backup. A failed backup is logged
# and tried again the next day: alert on the age of the newest backup (`pgbackrest info`), never
# on this process's exit.
set -u
stanza=${PGBACKREST_STANZA:-main}
hour=${BACKUP_HOUR:-1}
full_weekday=${BACKUP_FULL_WEEKDAY:-7}

# The type of the backup due on a day of the week (1-7): full or diff.
backup_type() {
  if [ "$1" = "$full_weekday" ]; then echo full; else echo diff; fi
}
if [ "${1:-}" = "--type-for-weekday" ]; then backup_type "$2"; exit 0; fi

until pgbackrest --stanza="$stanza" stanza-create; do
  echo "backup-schedule: stanza-create failed (PostgreSQL not up yet?); again in 10 s" >&2
  sleep 10
done
if ! pgbackrest --stanza="$stanza" --output=json info | grep -q '"label"'; then
  pgbackrest --stanza="$stanza" --type=full backup || echo "backup-schedule: the first full backup failed" >&2
fi

while :; do
  now=$(date -u +%s)
  next=$(date -u -d "$(date -u +%F) ${hour}:00" +%s)
  [ "$next" -gt "$now" ] || next=$((next + 86400))
  sleep $((next - now))
  type=$(backup_type "$(date -u +%u)")
  if pgbackrest --stanza="$stanza" --type="$type" backup; then
    echo "backup-schedule: $type backup done"
  else
    echo "backup-schedule: $type backup failed" >&2
  fi
done
