# Helpers of the benchmark scripts (Benchmarks/<name>/run.sh), sourced after scripts/lib.sh.
# shellcheck shell=bash

# bench_databases DB PGBENCH_DB: installs what is missing, starts the private PostgreSQL cluster,
# exports DATABASE_URL / _SYSTEM_URL / _MIGRATION_URL for DB, and (re)creates both databases, which
# are dropped again when the script exits. Sets ADMIN_URL.
bench_databases() {
    local databases=("$1" "$2")
    ensure_packages
    "$ROOT/scripts/postgres.sh" start
    eval "$("$ROOT/scripts/postgres.sh" env "$1")"
    ADMIN_URL="${DATABASE_MIGRATION_URL%/*}/postgres"
    for db in "${databases[@]}"; do
        "$PG_BIN/psql" "$ADMIN_URL" -qAt -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
    done
    # shellcheck disable=SC2064  # the names are fixed now
    trap "for db in ${databases[*]}; do \"$PG_BIN/psql\" \"$ADMIN_URL\" -qAt -c \"DROP DATABASE IF EXISTS \$db WITH (FORCE)\" >/dev/null 2>&1 || true; done" EXIT
}

# pgbench_tps DB CLIENTS SECONDS: TPS of pgbench's TPC-B-like script (scale 10) on DB, same cluster.
pgbench_tps() {
    local url="${DATABASE_MIGRATION_URL%/*}/$1"
    log "pgbench baseline (scale 10, $2 clients, $3 s)"
    "$PG_BIN/pgbench" -i -s 10 -q "$url" >/dev/null 2>&1
    "$PG_BIN/pgbench" -c "$2" -j 2 -T "$3" -n "$url" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | head -1
}

# field NAME [DIGITS]: a number from the benchmark's JSON output in $result, rounded.
field() { python3 -c "import json,sys; print(round(json.loads(sys.argv[1])['$1'], ${2:-0}))" "$result"; }

# machine_summary: "N cores, M GiB" for report headers.
machine_summary() { echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"; }
