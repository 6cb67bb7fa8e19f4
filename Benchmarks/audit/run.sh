#!/usr/bin/env bash
# audit-consumer benchmark: events/s ingested and event → row delay (p50/p99) of the release
# binary, reported next to pgbench TPS measured in the same run on the same PostgreSQL.
# Usage: Benchmarks/run.sh audit   (knobs: BENCH_EVENTS, BENCH_TENANTS, BENCH_RATE, BENCH_SECONDS,
#        BENCH_PARTITIONS, PGBENCH_SECONDS). Writes Benchmarks/results/audit.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

BENCH_DB=latchkey_bench_audit
PGBENCH_DB=latchkey_bench_pgbench
bench_databases "$BENCH_DB" "$PGBENCH_DB"
bench_build AuditBenchmark audit-consumer
bench_workspace

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
pgbench_tps="$(pgbench_tps "$PGBENCH_DB" 4 "${PGBENCH_SECONDS:-20}")"

log "audit-consumer ingestion and delay"
result="$(AUDIT_CONSUMER_BINARY="$BIN/audit-consumer" AUDIT_CONSUMER_LOG="$WORK/audit-consumer.log" \
    "$BIN/AuditBenchmark")"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

stamp="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
report="$RESULTS/audit.md"
cat >"$report" <<REPORT
# audit-consumer benchmark — $stamp

Machine: $(machine_summary), load average $load_before before / $load_after after (shared machine).
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
cat "$report"
