#!/bin/sh
# The pooler logs in to PostgreSQL as the owner only to look up the password of a connecting role
# (auth_query): the API's roles and their derived passwords live in the database alone.
set -eu
umask 077
printf '"%s" "%s"\n' "${POOLER_AUTH_USER:?}" "${POOLER_AUTH_PASSWORD:?}" > /tmp/userlist.txt
exec pgbouncer /etc/pgbouncer/pgbouncer.ini
