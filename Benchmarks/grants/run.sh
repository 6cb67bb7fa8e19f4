#!/usr/bin/env bash
# Benchmarks/run.sh grants (this file: Benchmarks/grants/run.sh) — the token-service grants benchmark.
#
# Builds release binaries in .build-bench, starts PostgreSQL (scratch database latchkey_bench_grants,
# recreated) and the embedded Kafka cluster, starts token-service, then GrantsLoad seeds the tenant,
# signs in once through the pages, prepares the requests and has wrk (Benchmarks/wrk-phase.lua) drive client_credentials,
# authorization_code + PKCE + DPoP and refresh_token + DPoP in closed loops, each after an ANALYZE (as autovacuum keeps a running system's
# statistics; a scratch database would otherwise be planned as empty). Same-run baselines: `pgbench` TPS
# on a scratch database and `openssl speed -seconds 3 ecdsap256`, and pgbench for 5 s before and after each phase
# (the phase's ratio is to their mean). Writes Benchmarks/results/grants.md.
# Cost per grant: CPU of token-service and of every PostgreSQL process (/proc), statements from
# pg_stat_statements (scripts/postgres.sh preloads it).
# Idle cost: statements and CPU a minute of the idle service after the load (BENCH_IDLE_SECONDS).
# Event JSON: `GrantsLoad json-encoding`, LatchkeyJSON.encode against JSONEncoder per event, in process.
# Knobs: BENCH_WORKERS (8), BENCH_SECONDS (10), BENCH_CODES (25000: enough for the code phase), BENCH_IDLE_SECONDS (60),
# BENCH_KAFKA (on; off = unreachable broker), BENCH_DATABASE_OPTIONS (pool options appended to the service's
# database URLs, e.g. pool_min=10&pool_keepalive=0; the report names them).
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$ROOT"

ensure_packages
command -v openssl >/dev/null || die "openssl is required"
ensure_debian_packages wrk
PGBENCH="$(command -v pgbench || echo "$PG_BIN/pgbench")"
[ -x "$PGBENCH" ] || die "pgbench is required (postgresql-contrib)"

bench_build token-service latchkey GrantsLoad
bench_workspace
PORT="$(free_port)"
PGBENCH_DB=latchkey_bench_pgbench
bench_database "$PGBENCH_DB"
PGBENCH_URL="$DATABASE_MIGRATION_URL"
bench_database latchkey_bench_grants
if [ "${BENCH_KAFKA:-on}" = off ]; then
    # Kafka unreachable: grants still commit their TokenIssued outbox rows, the relay only retries.
    export KAFKA_BROKERS=127.0.0.1:9
    KAFKA_NOTE="Kafka unreachable (BENCH_KAFKA=off): each grant still commits its \`TokenIssued\` outbox row; the relay only retries."
else
    bench_kafka
fi

log "baselines: pgbench on $PGBENCH_DB, openssl speed ecdsap256"
"$PGBENCH" -i -q -s 10 "$PGBENCH_URL" >"$WORK/pgbench-init.log" 2>&1 || { cat "$WORK/pgbench-init.log"; die "pgbench -i failed"; }
PGBENCH_TPS="$("$PGBENCH" -c 8 -j 2 -T 10 "$PGBENCH_URL" 2>/dev/null | awk '/^tps/ {printf "%.0f", $3; exit}')"
[ -n "$PGBENCH_TPS" ] || die "could not read pgbench TPS"
PGBENCH_SELECT_TPS="$("$PGBENCH" -S -c 8 -j 2 -T 10 "$PGBENCH_URL" 2>/dev/null | awk '/^tps/ {printf "%.0f", $3; exit}')"
SPEED="$(openssl speed -seconds 3 ecdsap256 2>/dev/null | awk '/nistp256/ {print $(NF-1), $NF}' | tail -1)"
OPENSSL_SIGN="$(cut -d' ' -f1 <<<"$SPEED")"
OPENSSL_VERIFY="$(cut -d' ' -f2 <<<"$SPEED")"
[ -n "$OPENSSL_VERIFY" ] || die "could not read openssl speed"
log "pgbench TPS $PGBENCH_TPS (select-only $PGBENCH_SELECT_TPS); openssl ecdsap256 sign/s $OPENSSL_SIGN, verify/s $OPENSSL_VERIFY"
JSON_ENCODING="$("$BIN/GrantsLoad" json-encoding --seconds 2)" || die "GrantsLoad json-encoding failed"
log "$JSON_ENCODING"

SECRET_HASH_KEY="$(openssl rand -base64 32)"
export SECRET_HASH_KEY
log "starting token-service on port $PORT"
HTTP_PORT="$PORT" LOG_LEVEL=warning \
TOKEN_SERVICE_PUBLIC_URL="http://127.0.0.1:$PORT" REGISTRATION_GATEWAY_PUBLIC_URL="http://127.0.0.1:1" \
KEY_ENCRYPTION_KEY="$(openssl rand -base64 32)" DPOP_NONCE_SECRET="$(openssl rand -base64 32)" \
DPOP_IAT_WINDOW_SECONDS=600 \
    "$BIN/token-service" >"$WORK/token-service.log" 2>&1 &
PIDS+=($!)
SERVICE_PID=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$((PORT + 1000))/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$((PORT + 1000))/healthz" >/dev/null || { tail -20 "$WORK/token-service.log"; die "token-service did not start"; }

MACHINE="Machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1), $(date -u '+%Y-%m-%d %H:%M UTC'). \
Load average when the load started: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared: other processes compete for both CPUs).\
${BENCH_DATABASE_OPTIONS:+ Database URLs of the service end in \`?$BENCH_DATABASE_OPTIONS\`.}"
REPORT="$ROOT/Benchmarks/results/grants.md"
STATS_DATABASE_URL="${DATABASE_MIGRATION_URL%/*}/postgres" ANALYZE_DATABASE_URL="$DATABASE_MIGRATION_URL" \
"$BIN/GrantsLoad" --port "$PORT" --service-pid "$SERVICE_PID" --postmaster-pid "$(head -1 "$PG_DIR/data/postmaster.pid")" \
    --idle-seconds "${BENCH_IDLE_SECONDS:-60}" --workers "${BENCH_WORKERS:-8}" --seconds "${BENCH_SECONDS:-10}" --codes "${BENCH_CODES:-25000}" \
    --wrk-script "$ROOT/Benchmarks/wrk-phase.lua" \
    --pgbench "$PGBENCH" --pgbench-url "$PGBENCH_URL" --pgbench-tps "$PGBENCH_TPS" --pgbench-select-tps "${PGBENCH_SELECT_TPS:-–}" --openssl-sign "$OPENSSL_SIGN" --openssl-verify "$OPENSSL_VERIFY" \
    --machine "$MACHINE" --report "$REPORT" ${KAFKA_NOTE:+--kafka-note "$KAFKA_NOTE"} || {
        cp "$WORK/token-service.log" "${TMPDIR:-/tmp}/grants-token-service.log"
        tail -20 "$WORK/token-service.log"
        die "load generator failed (token-service log: ${TMPDIR:-/tmp}/grants-token-service.log)"
    }
{
    printf '\n## Event JSON, in process (same run)\n\n'
    printf 'What writing one event costs through `LatchkeyJSON.encode` and through `JSONEncoder` with the same settings (same bytes):\n\n'
    sed 's/^/- /' <<<"$JSON_ENCODING"
    printf '\nLoad average when the load ended: %s.\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$REPORT"
log "report written to $REPORT"
