#!/usr/bin/env bash
# Runs once, when the compose Postgres volume is first initialised (docker-entrypoint-initdb.d).
# Creates what `latchkey migrate` expects to exist (docs/deployment.md, "A real PostgreSQL and Kafka"):
#   latchkey_owner   owns the database and runs migrations (DATABASE_MIGRATION_URL)
#   latchkey_app     tenant-scoped service role, Row-Level Security, never BYPASSRLS (DATABASE_URL)
#   latchkey_system  cross-tenant jobs: outbox relay, audit ingestion (DATABASE_SYSTEM_URL)
# Migration 0001 creates latchkey_app/latchkey_system only if they are missing (as NOLOGIN); here
# they are created first as LOGIN roles with passwords, so the migration keeps them and grants to them.
set -euo pipefail
: "${LATCHKEY_DB_NAME:?}" "${LATCHKEY_OWNER_PASSWORD:?}" "${LATCHKEY_APP_PASSWORD:?}" "${LATCHKEY_SYSTEM_PASSWORD:?}"

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v db="$LATCHKEY_DB_NAME" \
    -v owner_pw="$LATCHKEY_OWNER_PASSWORD" \
    -v app_pw="$LATCHKEY_APP_PASSWORD" \
    -v system_pw="$LATCHKEY_SYSTEM_PASSWORD" <<'SQL'
SELECT format('CREATE ROLE latchkey_owner LOGIN PASSWORD %L', :'owner_pw')
    WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'latchkey_owner') \gexec
SELECT format('CREATE ROLE latchkey_app LOGIN NOBYPASSRLS PASSWORD %L', :'app_pw')
    WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'latchkey_app') \gexec
SELECT format('CREATE ROLE latchkey_system LOGIN NOBYPASSRLS PASSWORD %L', :'system_pw')
    WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'latchkey_system') \gexec
-- The owner administers the service roles (as in scripts/postgres.sh), e.g. to rotate their passwords.
GRANT latchkey_app, latchkey_system TO latchkey_owner WITH ADMIN OPTION;
SELECT format('CREATE DATABASE %I OWNER latchkey_owner', :'db')
    WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') \gexec
-- Nobody but the owner creates objects in the schema the services use.
\connect :db
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
ALTER SCHEMA public OWNER TO latchkey_owner;
SQL
