#!/bin/sh
# Patroni's post_bootstrap (deploy/patroni/patroni.yml): runs once, on the node that initialised the
# cluster, with a connection string for the superuser as its argument. Creates the application's
# database (PATRONI_APP_DATABASE, default opinion); `npm run migrate` creates everything in it.
set -eu
echo 'create database :"db"' | psql "$1" -v ON_ERROR_STOP=1 -v db="${PATRONI_APP_DATABASE:-opinion}"
