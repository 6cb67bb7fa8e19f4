# Shared by the Benchmarks/<name>/run.sh scripts: release binaries, a work folder whose processes stop on
# exit, a recreated scratch database on the private PostgreSQL cluster, and the embedded Kafka cluster.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
RESULTS="$ROOT/Benchmarks/results"

# Release builds of the products in .build-bench, the one scratch folder of every benchmark: the
# Benchmarks package's own executables and the product's executables it depends on, linked as the image
# links them (the Swift runtime and Foundation statically). Sets BIN.
# BENCH_BIN names a folder of binaries built before (with their .resources folders) to run instead, so
# that two builds can be measured alternately in one session.
bench_build() {
    local scratch="$ROOT/.build-bench" product
    if [ -n "${BENCH_BIN:-}" ]; then
        for product in "$@"; do [ -x "$BENCH_BIN/$product" ] || die "BENCH_BIN=$BENCH_BIN has no $product"; done
        BIN="$BENCH_BIN"
        return
    fi
    log "building release binaries (the first build takes several minutes)"
    for product in "$@"; do
        swift build -c release --static-swift-stdlib --package-path "$ROOT/Benchmarks" --scratch-path "$scratch" \
            --product "$product" >/dev/null \
            || swift build -c release --static-swift-stdlib --package-path "$ROOT/Benchmarks" --scratch-path "$scratch" \
                --product "$product" \
            || die "could not build $product"
    done
    BIN="$scratch/release"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# Commands run when the script exits, in order (bench_workspace and bench_databases add theirs).
EXIT_COMMANDS=()
on_exit() {
    EXIT_COMMANDS+=("$1")
    trap 'for command in "${EXIT_COMMANDS[@]}"; do eval "$command"; done' EXIT INT TERM
}

# A temporary folder WORK; processes whose pids are added to PIDS are stopped (and WORK removed) on exit.
bench_workspace() {
    WORK="$(mktemp -d)"
    PIDS=()
    on_exit bench_cleanup
}

bench_cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}

# Recreates database $1, exports its DATABASE_URL / _SYSTEM_URL / _MIGRATION_URL and migrates it.
bench_database() {
    "$ROOT/scripts/postgres.sh" start
    "$ROOT/scripts/postgres.sh" recreate "$1"
    eval "$("$ROOT/scripts/postgres.sh" env "$1")"
    "$BIN/latchkey" migrate >/dev/null
    # Pool options for the services' URLs (BENCH_DATABASE_OPTIONS, e.g. pool_min=10&pool_keepalive=0).
    if [ -n "${BENCH_DATABASE_OPTIONS:-}" ]; then
        DATABASE_URL="$DATABASE_URL?$BENCH_DATABASE_OPTIONS"
        DATABASE_SYSTEM_URL="$DATABASE_SYSTEM_URL?$BENCH_DATABASE_OPTIONS"
    fi
}

# Starts the embedded Kafka cluster (stopped on exit) and exports KAFKA_BROKERS.
bench_kafka() {
    "$BIN/latchkey" kafka-cluster --brokers 1 --bootstrap-file "$WORK/kafka.bootstrap" >"$WORK/kafka.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do [ -s "$WORK/kafka.bootstrap" ] && break; sleep 0.1; done
    [ -s "$WORK/kafka.bootstrap" ] || die "embedded Kafka cluster did not start"
    KAFKA_BROKERS="$(cat "$WORK/kafka.bootstrap")"
    export KAFKA_BROKERS
}


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
    on_exit "for db in ${databases[*]}; do \"\$PG_BIN/psql\" \"\$ADMIN_URL\" -qAt -c \"DROP DATABASE IF EXISTS \$db WITH (FORCE)\" >/dev/null 2>&1 || true; done"
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
