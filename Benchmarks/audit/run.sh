#!/usr/bin/env bash
# audit-consumer benchmark: events/s ingested and event → row delay (p50/p99) of the release
# binary, reported next to pgbench TPS measured in the same run on the same PostgreSQL.
# Usage: Benchmarks/run.sh audit   (knobs: BENCH_EVENTS, BENCH_TENANTS, BENCH_RATE, BENCH_SECONDS,
#        BENCH_PARTITIONS, PGBENCH_SECONDS). Writes Benchmarks/audit/results/latest.md.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/lib.sh"

RESULTS="$HERE/results"
BENCH_DB=latchkey_bench_audit
PGBENCH_DB=latchkey_bench_pgbench
mkdir -p "$RESULTS"

ensure_packages
"$ROOT/scripts/postgres.sh" start
eval "$("$ROOT/scripts/postgres.sh" env "$BENCH_DB")"
ADMIN_URL="${DATABASE_MIGRATION_URL%/*}/postgres"
for db in "$BENCH_DB" "$PGBENCH_DB"; do
    "$PG_BIN/psql" "$ADMIN_URL" -qAt -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
done
trap 'for db in "$BENCH_DB" "$PGBENCH_DB"; do "$PG_BIN/psql" "$ADMIN_URL" -qAt -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true; done' EXIT

log "building the benchmark and audit-consumer (release)"
(cd "$HERE" && swift build -c release --product AuditBenchmark && swift build -c release --product audit-consumer) >&2
BIN="$(cd "$HERE" && swift build -c release --show-bin-path)"

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
log "pgbench baseline (scale 10, 4 clients, ${PGBENCH_SECONDS:-20} s)"
PGBENCH_URL="${DATABASE_MIGRATION_URL%/*}/$PGBENCH_DB"
"$PG_BIN/pgbench" -i -s 10 -q "$PGBENCH_URL" >/dev/null 2>&1
pgbench_tps="$("$PG_BIN/pgbench" -c 4 -j 2 -T "${PGBENCH_SECONDS:-20}" -n "$PGBENCH_URL" 2>/dev/null \
    | sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | head -1)"

log "audit-consumer ingestion and delay"
result="$(AUDIT_CONSUMER_BINARY="$BIN/audit-consumer" AUDIT_CONSUMER_LOG="$RESULTS/consumer.log" \
    "$BIN/AuditBenchmark")"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

field() { python3 -c "import json,sys; print(round(json.loads(sys.argv[1])['$1'], ${2:-0}))" "$result"; }
stamp="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
report="$RESULTS/latest.md"
cat >"$report" <<REPORT
# audit-consumer benchmark — $stamp

Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), load average $load_before before / $load_after after (shared machine).
PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') (fsync on, synchronous_commit on), embedded Kafka (librdkafka mock cluster, 1 broker), release build.

| measure | value |
|---|---|
| pgbench TPS (TPC-B-like, scale 10, 4 clients, same run) | $pgbench_tps |
| events ingested per second (backlog of $(field events) events, $(field tenants) tenants, $(field partitions_per_topic) partitions per topic) | **$(field ingest_events_per_second)** |
| consumer wall time incl. start-up and 3 s group join | $(field consumer_wall_seconds_including_start_and_group_join 1) s |
| steady stream: target / achieved events per second | $(field stream_rate_target) / $(field stream_rate_achieved) |
| end-to-end delay (event time → stored row) p50 | $(field delay_p50_ms 1) ms |
| end-to-end delay p99 | **$(field delay_p99_ms 1) ms** |
| end-to-end delay max | $(field delay_max_ms 1) ms |

Raw measurements:

\`\`\`json
$result
\`\`\`
REPORT
cp "$report" "$RESULTS/audit-$stamp.md"  # history, git-ignored
cat "$report"
