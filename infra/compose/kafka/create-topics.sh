#!/usr/bin/env bash
# The compose topic-creation job: creates every Latchkey topic (Sources/LatchkeyCore/Events/LatchkeyEventType)
# and the audit consumer's dead-letter topic, idempotently, then exits 0.
set -euo pipefail
BOOTSTRAP="${KAFKA_BOOTSTRAP:-kafka:9092}"
PREFIX="${KAFKA_TOPIC_PREFIX:-latchkey.}"
PARTITIONS="${KAFKA_TOPIC_PARTITIONS:-3}"
TOPICS_BIN="${KAFKA_HOME:-/opt/kafka}/bin/kafka-topics.sh"

create() {
    local topic="$1"; shift
    "$TOPICS_BIN" --bootstrap-server "$BOOTSTRAP" --create --if-not-exists \
        --topic "$PREFIX$topic" --partitions "$PARTITIONS" --replication-factor 1 "$@"
}

create client-registered
create token-issued
# dpop-verifier replays this topic from the start on every boot to rebuild its revocation set:
# it must never lose a record.
create client-revoked --config retention.ms=-1
create client-updated
create user-registered
create token-revoked
create refresh-token-reuse-detected
# UserDisabled and UserEnabled: dpop-verifier replays it from the start too, and a user stays disabled
# however long ago that happened.
create user-disabled --config retention.ms=-1
create dead-letter --config retention.ms=2592000000
"$TOPICS_BIN" --bootstrap-server "$BOOTSTRAP" --list
