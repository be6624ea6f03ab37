#!/bin/sh
# The pooler logs in to PostgreSQL as the owner only to look up the password of a connecting role
# (auth_query): the API's roles and their derived passwords live in the database alone.
set -eu
umask 077
printf '"%s" "%s"\n' "${POOLER_AUTH_USER:?}" "${POOLER_AUTH_PASSWORD:?}" > /tmp/userlist.txt
# POOLER_SERVER replaces the server of the `opinion` database (docker-compose.patroni.yml: HAProxy's
# leader port, so the pooler follows the Patroni cluster's leader).
ini=/etc/pgbouncer/pgbouncer.ini
if [ -n "${POOLER_SERVER:-}" ]; then
  sed "s|^opinion = .*|opinion = ${POOLER_SERVER}|" "$ini" > /tmp/pgbouncer.ini
  ini=/tmp/pgbouncer.ini
fi
exec pgbouncer "$ini"
