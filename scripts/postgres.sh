#!/usr/bin/env bash
# Private PostgreSQL cluster for development and tests, under .run/postgres on a non-default port.
# Usage: scripts/postgres.sh start|stop|status|env [database]|recreate database
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

APP_PASSWORD="${LATCHKEY_PG_APP_PASSWORD:-latchkey-app-dev}"
SYSTEM_PASSWORD="${LATCHKEY_PG_SYSTEM_PASSWORD:-latchkey-system-dev}"
OWNER_PASSWORD="${LATCHKEY_PG_OWNER_PASSWORD:-latchkey-owner-dev}"

psql_admin() { PGOPTIONS="-c client_min_messages=warning" as_postgres "$PG_BIN/psql" -h "$PG_DIR/socket" -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 -qAt "$@"; }

start() {
    mkdir -p "$RUN_DIR"
    if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
        log "creating PostgreSQL cluster in $PG_DIR (port $PG_PORT)"
        mkdir -p "$PG_DIR/data" "$PG_DIR/socket"
        [ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$PG_DIR"
        as_postgres "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
            --encoding=UTF8 --locale=C.UTF-8 >/dev/null
        cat >>"$PG_DIR/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_DIR/socket'
max_connections = 2000
shared_buffers = 256MB
fsync = on
log_min_messages = warning
CONF
    fi
    # A cluster made for another port (the default was 55432, or LATCHKEY_PG_PORT changed) moves: the last
    # `port` line of postgresql.conf wins, and a running server is restarted on it.
    local configured
    configured="$(sed -n 's/^port = \([0-9]*\).*/\1/p' "$PG_DIR/data/postgresql.conf" | tail -n 1)"
    if [ "$configured" != "$PG_PORT" ]; then
        log "moving PostgreSQL from port ${configured:-5432} to $PG_PORT"
        echo "port = $PG_PORT" | as_postgres tee -a "$PG_DIR/data/postgresql.conf" >/dev/null
        if as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
            as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -t 60 restart >/dev/null
        fi
    fi
    if ! as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
        log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
        as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -t 60 start >/dev/null
    fi
    # The test suite runs ~100 suites at once, each with real service pools: it holds up to ~800
    # connections, in bursts, and a connection refused for want of a slot fails whichever test opened it
    # (clusters created before this setting are raised once, which needs a restart).
    if [ "$(psql_admin -d postgres -c 'SHOW max_connections')" -lt 2000 ]; then
        log "raising max_connections to 2000 (restarting PostgreSQL)"
        psql_admin -d postgres -c "ALTER SYSTEM SET max_connections = 2000"
        as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -t 60 restart >/dev/null
    fi
    # pg_stat_statements (statement counts for the benchmarks and the idle-cost tests) must be preloaded.
    if ! psql_admin -d postgres -c 'SHOW shared_preload_libraries' | grep -q pg_stat_statements; then
        log "preloading pg_stat_statements (restarting PostgreSQL)"
        psql_admin -d postgres -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
        as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/postgres.log" -w -t 60 restart >/dev/null
    fi
    psql_admin -d postgres -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"
    # Roles: owner (runs migrations), app (tenant-scoped, RLS), system (cross-tenant jobs).
    psql_admin -d postgres <<SQL
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'latchkey_owner') THEN
        CREATE ROLE latchkey_owner LOGIN CREATEDB CREATEROLE PASSWORD '$OWNER_PASSWORD';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'latchkey_app') THEN
        CREATE ROLE latchkey_app LOGIN NOBYPASSRLS PASSWORD '$APP_PASSWORD';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'latchkey_system') THEN
        CREATE ROLE latchkey_system LOGIN NOBYPASSRLS PASSWORD '$SYSTEM_PASSWORD';
    END IF;
END
\$\$;
GRANT latchkey_app, latchkey_system TO latchkey_owner WITH ADMIN OPTION;
-- Tests check which statements the services ran: pg_stat_statements shows other roles' statement texts
-- only to pg_read_all_stats (this local cluster's owner role only; production roles never get it).
GRANT pg_read_all_stats TO latchkey_owner;
SQL
    for db in latchkey latchkey_test ${LATCHKEY_TEST_DB:-}; do
        if [ -z "$(psql_admin -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
            psql_admin -d postgres -c "CREATE DATABASE $db OWNER latchkey_owner"
        fi
    done
}

stop() {
    if [ -f "$PG_DIR/data/PG_VERSION" ] && as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
        log "stopping PostgreSQL"
        as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null
    fi
}

# Prints the connection URLs for a database (default: latchkey) as shell exports.
env_for() {
    local db="${1:-latchkey}"
    echo "export DATABASE_URL='postgres://latchkey_app:$APP_PASSWORD@127.0.0.1:$PG_PORT/$db'"
    echo "export DATABASE_SYSTEM_URL='postgres://latchkey_system:$SYSTEM_PASSWORD@127.0.0.1:$PG_PORT/$db'"
    echo "export DATABASE_MIGRATION_URL='postgres://latchkey_owner:$OWNER_PASSWORD@127.0.0.1:$PG_PORT/$db'"
}

# Drops (disconnecting its sessions) and creates a database owned by latchkey_owner: a clean slate.
recreate() {
    local db="$1"
    [[ "$db" =~ ^[a-z_][a-z0-9_]*$ ]] || die "not a plain database name: $db"
    psql_admin -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
    psql_admin -d postgres -c "CREATE DATABASE $db OWNER latchkey_owner"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status) as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" status ;;
    env) env_for "${2:-latchkey}" ;;
    recreate) recreate "${2:?database name}" ;;
    *) die "usage: $0 start|stop|status|env [database]|recreate database" ;;
esac
