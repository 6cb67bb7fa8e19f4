"""What each service does on Kafka, read from the Swift code, and the ACLs that follow (used by validate.py).

The facts come from the sources that decide them, so a topic or group added to the code and not granted to
the service's KafkaUser (or granted and no longer used) fails validation:
  - the event topics: the `topicSuffix` switch of LatchkeyEventType, and its dead-letter topic;
  - the producers: every service whose application starts the outbox relay (`makeOutboxServices`) writes
    every event topic, because the relays of all services claim rows from one shared outbox table;
  - the audit consumer: every event topic in the group of AuditSettings.groupID, and it writes the
    dead-letter topic (DeadLetterPublisher);
  - the sidecar: the topics of the LatchkeyEventType cases its application subscribes to, in a group per
    process whose name starts with the literal before the UUID in RevocationListener.
"""
import os
import re

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVENT_TYPE = "Sources/LatchkeyCore/Events/LatchkeyEventType.swift"
AUDIT_SETTINGS = "Services/AuditConsumer/AuditSettings.swift"
AUDIT_APPLICATION = "Services/AuditConsumer/Application+build.swift"
SIDECAR_APPLICATION = "Services/DPoPVerifier/Application+build.swift"
SIDECAR_LISTENER = "Services/DPoPVerifier/Revocation/RevocationListener.swift"
# Each service's folder and the ServiceDescriptor name it runs as (its command in the manifests).
SERVICES = {
    "registration-gateway": "Services/RegistrationGateway",
    "token-service": "Services/TokenService",
    "audit-consumer": "Services/AuditConsumer",
    "dpop-verifier": "Services/DPoPVerifier",
}
PRODUCE = ("Write", "Describe")
CONSUME = ("Read", "Describe")


class CodeChanged(Exception):
    """The code no longer has the shape this module reads: update the module with it."""


def read(path):
    with open(os.path.join(REPOSITORY, path), encoding="utf-8") as handle:
        return handle.read()


def one(pattern, path, what):
    match = re.search(pattern, read(path), re.S)
    if not match:
        raise CodeChanged(f"cannot find {what} in {path}")
    return match.group(1)


def service_sources(folder):
    text = []
    for directory, _, files in os.walk(os.path.join(REPOSITORY, folder)):
        for file in sorted(files):
            if file.endswith(".swift"):
                with open(os.path.join(directory, file), encoding="utf-8") as handle:
                    text.append(handle.read())
    return "\n".join(text)


def code_facts():
    """The facts above, as names without the topic prefix."""
    switch = one(r"var topicSuffix: String \{\s*switch self \{(.*?)\n        \}", EVENT_TYPE, "topicSuffix")
    suffixes = {}
    for cases, suffix in re.findall(r"case ([^:]+): return \"([a-z0-9.-]+)\"", switch):
        for case in re.findall(r"\.(\w+)", cases):
            suffixes[case] = suffix
    if not suffixes:
        raise CodeChanged(f"no cases in the topicSuffix switch of {EVENT_TYPE}")
    sidecar_cases = set(re.findall(r"LatchkeyEventType\.(\w+)\.topic\(", read(SIDECAR_APPLICATION)))
    if not sidecar_cases or not sidecar_cases <= suffixes.keys():
        raise CodeChanged(f"the sidecar's topics in {SIDECAR_APPLICATION}: {sorted(sidecar_cases)}")
    if "DeadLetterPublisher(" not in read(AUDIT_APPLICATION):
        raise CodeChanged(f"the audit consumer no longer makes a DeadLetterPublisher ({AUDIT_APPLICATION})")
    return {
        "events": sorted(set(suffixes.values())),
        "dead_letter": one(r"func deadLetterTopic\([^{]*\{\s*prefix \+ \"([a-z0-9.-]+)\"", EVENT_TYPE, "deadLetterTopic"),
        "producers": sorted(name for name, folder in SERVICES.items() if "makeOutboxServices(" in service_sources(folder)),
        "audit_group": one(r"var groupID = \"([^\"]+)\"", AUDIT_SETTINGS, "groupID"),
        "sidecar_topics": sorted({suffixes[case] for case in sidecar_cases}),
        "sidecar_group_prefix": one(r"groupID: \"([A-Za-z0-9._-]+)\\\(", SIDECAR_LISTENER, "the sidecar's group id"),
    }


def expected_acls(prefix, facts):
    """Service name → the set of allowed (resource type, name, pattern type, operation) it needs."""

    def topics(names, operations):
        return {("topic", prefix + name, "literal", operation) for name in names for operation in operations}

    acls = {name: topics(facts["events"], PRODUCE) for name in facts["producers"]}
    acls["audit-consumer"] = (
        topics(facts["events"], CONSUME)
        | topics([facts["dead_letter"]], PRODUCE)
        | {("group", facts["audit_group"], "literal", "Read")})
    acls["dpop-verifier"] = topics(facts["sidecar_topics"], CONSUME) | {
        ("group", facts["sidecar_group_prefix"], "prefix", "Read")}
    return acls


def granted_acls(user):
    """A KafkaUser's allow rules as the tuples of expected_acls; deny rules and hosts are listed apart."""
    granted, other = set(), []
    for acl in user.get("spec", {}).get("authorization", {}).get("acls", []):
        resource = acl.get("resource", {})
        if acl.get("type", "allow") != "allow" or acl.get("host", "*") != "*":
            other.append(acl)
            continue
        for operation in acl.get("operations", []):
            granted.add((resource.get("type"), resource.get("name"), resource.get("patternType", "literal"), operation))
    return granted, other
