#!/usr/bin/env bash
# The README's test command: installs what is missing, checks the library layering
# (scripts/check-layers.py) and the formatting (swift format lint, .swift-format), starts the private PostgreSQL cluster, runs the whole suite (`swift test`)
# against it and the embedded Kafka cluster, runs the end-to-end story against a real broker
# (scripts/real-broker.sh), fuzzes every service with schemathesis
# (scripts/fuzz-api.sh), then validates the deployment files offline (scripts/validate-deploy.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

# The browser tests drive a real headless Chromium through chromedriver.
# gdb: the test watchdog prints the threads of a hung test process.
ensure_packages chromium chromium-driver gdb
[ -d "$ROOT/../shared/vectors" ] || die "../shared/vectors is missing next to the repository: the vector tests need it"
"$ROOT/scripts/postgres.sh" start
eval "$("$ROOT/scripts/postgres.sh" env "${LATCHKEY_TEST_DB:-latchkey_test}")"
export LATCHKEY_TEST_DATABASE_URL="$DATABASE_URL"
export LATCHKEY_TEST_SYSTEM_DATABASE_URL="$DATABASE_SYSTEM_URL"
export LATCHKEY_TEST_MIGRATION_DATABASE_URL="$DATABASE_MIGRATION_URL"
export LATCHKEY_VECTORS_DIR="$ROOT/../shared/vectors"

log "checking the library layering (scripts/check-layers.py)"
# Before the build, so a forbidden dependency fails in seconds.
python3 "$ROOT/scripts/check-layers.py"
log "checking the formatting (swift format lint, configured by .swift-format)"
swift format lint --strict --recursive --parallel \
    Package.swift Sources Services Tests Examples Benchmarks/Package.swift Benchmarks/Sources
log "building"
swift build --build-tests "$@"
log "running tests"
# A watchdog: a hung test must fail the run, not eat the CI time limit, and say where it hung.
status=0
watchdog_dir="$ROOT/.build/test-watchdog"
rm -rf "$watchdog_dir"
python3 "$ROOT/scripts/test-watchdog.py" "${LATCHKEY_TEST_TIMEOUT:-1200}" "$watchdog_dir" -- swift test --skip-build "$@" || status=$?

log "real-broker job: the end-to-end story against Tansu with PyPI's librdkafka (scripts/real-broker.sh)"
broker_status=0
"$ROOT/scripts/real-broker.sh" || broker_status=$?
if ((broker_status == 0)); then log "real-broker job: PASS"; else log "real-broker job: FAIL (status $broker_status)"; fi
((status != 0)) || status=$broker_status

log "fuzzing every service with schemathesis (scripts/fuzz-api.sh)"
fuzz_status=0
"$ROOT/scripts/fuzz-api.sh" || fuzz_status=$?
((status != 0)) || status=$fuzz_status

log "validating the deployment files (Dockerfile, docker-compose, Kubernetes, OpenAPI)"
# Runs even when a Swift test failed, so one CI run reports both; the Swift status wins.
deploy_status=0
"$ROOT/scripts/validate-deploy.sh" || deploy_status=$?
((status != 0)) || status=$deploy_status
# Repeated last, where a truncated CI log still shows it.
[ -f "$watchdog_dir/summary.txt" ] && cat "$watchdog_dir/summary.txt"
exit "$status"
