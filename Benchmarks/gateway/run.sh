#!/usr/bin/env bash
# registration-gateway benchmark: registrations per second, full metadata and templatized,
# with the transactional outbox and its relay publishing to Kafka, next to pgbench TPS measured in the
# same run with the same number of clients; outbox → Kafka delay p50/p99.
# Usage: Benchmarks/run.sh gateway   (knobs: BENCH_CONNECTIONS, BENCH_SECONDS, BENCH_PACED_SECONDS,
#        BENCH_PACED_PERCENT, BENCH_IDLE_SECONDS, PGBENCH_SECONDS). Writes Benchmarks/results/gateway.md.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

BENCH_DB=latchkey_bench_gateway
PGBENCH_DB=latchkey_bench_gateway_pgbench
CONNECTIONS="${BENCH_CONNECTIONS:-8}"
bench_databases "$BENCH_DB" "$PGBENCH_DB"
ensure_debian_packages wrk
bench_build GatewayBenchmark registration-gateway
bench_workspace

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
pgbench_tps="$(pgbench_tps "$PGBENCH_DB" "$CONNECTIONS" "${PGBENCH_SECONDS:-20}")"

log "registration-gateway load ($CONNECTIONS connections)"
result="$(BENCH_POSTMASTER_PID="$(head -1 "$PG_DIR/data/postmaster.pid")" GATEWAY_BINARY="$BIN/registration-gateway" GATEWAY_LOG="$WORK/registration-gateway.log" BENCH_CONNECTIONS="$CONNECTIONS" \
    BENCH_WRK_SCRIPT="$ROOT/Benchmarks/wrk-phase.lua" \
    "$BIN/GatewayBenchmark")"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

stamp="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
report="$RESULTS/gateway.md"
cat >"$report" <<REPORT
# registration-gateway benchmark — $stamp

Machine: $(machine_summary), load average $load_before before / $load_after after (shared machine: other builds may run).
PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') (fsync on, synchronous_commit on), embedded Kafka (librdkafka mock cluster, 1 broker, in the load generator's process), release build.
Gateway, load generator, PostgreSQL and Kafka share the same $(nproc) cores. Each registration: rate-limit counters (tenant and source),
an initial access token use, the client row with hashed credentials and its \`ClientRegistered\` outbox row in one transaction;
the gateway's outbox relay publishes with \`acks=all\` and idempotence and marks rows sent after the delivery report.

| measure | value |
|---|---|
| pgbench TPS (TPC-B-like, scale 10, $CONNECTIONS clients, same run) | $pgbench_tps |
| full-metadata registrations per second ($CONNECTIONS connections, closed loop sent by \`wrk\`, $(field seconds_per_phase) s) | **$(field full_registrations_per_second 1)** |
| full metadata: HTTP latency p50 / p99 | $(field full_http_p50_ms 1) / $(field full_http_p99_ms 1) ms |
| templatized registrations per second (\`software_id\` + \`client_name\`) | **$(field template_registrations_per_second 1)** |
| templatized: HTTP latency p50 / p99 | $(field template_http_p50_ms 1) / $(field template_http_p99_ms 1) ms |
| outbox → Kafka (row created → consumed) p50 / p99, under full closed-loop load | $(field full_outbox_to_consumer_p50_ms 1) / $(field full_outbox_to_consumer_p99_ms 1) ms |
| paced at $(field paced_percent_of_full_peak) % of the full-metadata peak ($(field paced_rate_target 1)/s): HTTP latency p50 / p99 | $(field paced_http_p50_ms 1) / $(field paced_http_p99_ms 1) ms |
| paced: outbox → relay acknowledged p50 / p99 | $(field paced_outbox_to_ack_p50_ms 1) / $(field paced_outbox_to_ack_p99_ms 1) ms |
| paced: outbox → Kafka (row created → consumed) p50 / p99 | $(field paced_outbox_to_consumer_p50_ms 1) / **$(field paced_outbox_to_consumer_p99_ms 1) ms** |
| events written / consumed | $(field events_written) / $(field events_consumed) |
| full metadata, per registration: gateway CPU / PostgreSQL CPU / load generator CPU (\`/proc\`, \`getrusage\`) | $(field full_service_cpu_us) / $(field full_postgres_cpu_us) / $(field full_generator_cpu_us) µs |
| full metadata, statements per registration (\`pg_stat_statements\`, the relay's included) | $(field full_statements 1) |
| pgbench ratio: full-metadata registrations / pgbench TPS | $(python3 -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2])*100:.0f} %')" "$(field full_registrations_per_second 1)" "$pgbench_tps") |
| idle gateway after the load, per minute ($(field idle_seconds) s measured): statements / gateway CPU / PostgreSQL CPU | $(field idle_statements_per_minute) / $(field idle_service_cpu_ms_per_minute 1) ms / $(field idle_postgres_cpu_ms_per_minute 1) ms |
| gateway RSS idle / peak | $(field gateway_rss_idle_mib 1) / $(field gateway_rss_peak_mib 1) MiB |

Raw measurements:

\`\`\`json
$result
\`\`\`
REPORT
cat "$report"
