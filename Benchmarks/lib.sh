# Shared by the Benchmarks/<name>/run.sh scripts: release binaries, a work folder whose processes stop on
# exit, a recreated scratch database on the private PostgreSQL cluster, and the embedded Kafka cluster.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

# Release builds of the products in .build-bench (shared by every benchmark); sets BIN.
bench_build() {
    local scratch="$ROOT/.build-bench" product
    log "building release binaries (the first build takes several minutes)"
    for product in "$@"; do
        swift build -c release --package-path "$ROOT/Benchmarks" --scratch-path "$scratch" --product "$product" >/dev/null \
            || swift build -c release --package-path "$ROOT/Benchmarks" --scratch-path "$scratch" --product "$product" \
            || die "could not build $product"
    done
    BIN="$scratch/release"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# A temporary folder WORK; processes whose pids are added to PIDS are stopped (and WORK removed) on exit.
bench_workspace() {
    WORK="$(mktemp -d)"
    PIDS=()
    trap bench_cleanup EXIT INT TERM
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
