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
# dpop-verifier replays the revocation topics from the start on every boot (Shared/Events/LatchkeyEventType
# topicConfigs). A record must outlive every token it ended: 7 days, above the longest access-token lifetime a
# sidecar accepts (DPOP_MAX_TOKEN_LIFETIME_SECONDS, 1 day by default); raise both together. ClientRevoked is
# keyed by client, so compaction keeps one record per client.
create client-revoked --config cleanup.policy=compact,delete --config retention.ms=604800000
create client-updated
create user-registered
# Never compacted: the records of one client name different tokens.
create token-revoked --config cleanup.policy=delete --config retention.ms=604800000
create refresh-token-reuse-detected
# UserDisabled and UserEnabled: a user stays disabled however long ago that happened; compaction keeps each
# user's latest state.
create user-disabled --config cleanup.policy=compact
create user-password-changed
create dead-letter --config retention.ms=2592000000
"$TOPICS_BIN" --bootstrap-server "$BOOTSTRAP" --list
