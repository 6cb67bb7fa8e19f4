#!/usr/bin/env python3
"""Offline validation of the Kubernetes manifests (used by scripts/validate-deploy.sh).

Renders the base and every overlay with `kubectl kustomize` (or a `kustomize` binary), validates
each core resource against the Kubernetes JSON schemas of kubernetes-validate (strict: unknown
fields are errors), checks the custom resources (Strimzi, CloudNativePG) structurally, and checks
the rules the deployment promises: probes, resources, hardened security contexts, secrets only by
reference, a PodDisruptionBudget and an HPA for every Deployment, a default-deny NetworkPolicy, every
Deployment's management port scraped by the ServiceMonitor, and every metric the alerting rules and the
Grafana dashboard query exported by the code.

The custom resources are validated against the CRD schemas of the tested operator releases (TESTED),
kept in crds/ (descriptions stripped). To move to a newer release, import its CRDs and update TESTED:
    python3 infra/k8s/validate.py --import-crd 040-Crd-kafka.yaml postgresql.cnpg.io_poolers.yaml ...
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kafka_access  # noqa: E402

CRDS = os.path.join(HERE, "crds")
REPOSITORY = os.path.dirname(os.path.dirname(HERE))
# The operator releases the manifests are written for and whose CRD schemas are in crds/ (docs/deployment.md).
TESTED = {
    "strimzi": "1.2.0",
    # Kafka versions Strimzi 1.2.0 supports, with their KRaft metadata versions (its kafka-versions.yaml).
    "kafka": {"4.2.0": "4.2-IV1", "4.2.1": "4.2-IV1", "4.3.0": "4.3-IV0", "4.3.1": "4.3-IV0"},
    "cloudnative-pg": "1.30.0",
    "barman-cloud-plugin": "0.14.0",
    "prometheus-operator": "0.93.0",
}
BARMAN_PLUGIN = "barman-cloud.cloudnative-pg.io"
# Connections PostgreSQL keeps beyond the pools: superuser_reserved_connections (3) and the operator's
# instance manager, probes and backups.
RESERVED_CONNECTIONS = 13
# pool_max when a postgres:// URL does not set it (DatabaseConfiguration).
DEFAULT_POOL_MAX = 10
TARGETS = ["base", "overlays/dev", "overlays/prod"]
# Custom resources: validated against crds/, plus the fields the manifests rely on.
CUSTOM_KINDS = {
    ("kafka.strimzi.io/v1", "KafkaTopic"): ["spec.topicName", "spec.partitions", "spec.replicas"],
    ("kafka.strimzi.io/v1", "Kafka"): ["spec.kafka.listeners", "spec.kafka.version", "spec.kafka.metadataVersion"],
    ("kafka.strimzi.io/v1", "KafkaNodePool"): ["spec.replicas", "spec.roles", "spec.storage"],
    ("kafka.strimzi.io/v1", "KafkaUser"): ["spec.authentication.type", "spec.authorization.acls"],
    ("postgresql.cnpg.io/v1", "Cluster"): ["spec.instances", "spec.storage.size", "spec.bootstrap.initdb.owner",
                                           "spec.plugins", "spec.postgresql.parameters.max_connections"],
    ("postgresql.cnpg.io/v1", "Pooler"): ["spec.cluster.name", "spec.instances", "spec.pgbouncer.poolMode"],
    ("postgresql.cnpg.io/v1", "ScheduledBackup"): ["spec.cluster.name", "spec.schedule", "spec.method"],
    ("barmancloud.cnpg.io/v1", "ObjectStore"): ["spec.configuration.destinationPath"],
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ["spec.selector.matchLabels", "spec.endpoints"],
    ("monitoring.coreos.com/v1", "PrometheusRule"): ["spec.groups"],
}
# Beyond the settings the code reads as secrets, any variable with one of these words is taken for one.
SECRET_WORDS = {"SECRET", "PASSWORD"}
# The services that talk to Kafka, by their command; each must connect as its own KafkaUser.
KAFKA_SERVICES = set(kafka_access.SERVICES)


def kustomize_command():
    if os.environ.get("KUSTOMIZE"):
        return os.environ["KUSTOMIZE"].split()
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    sys.exit("neither kubectl nor kustomize found (scripts/validate-deploy.sh installs kubectl from PyPI)")


def render(target):
    result = subprocess.run(kustomize_command() + [os.path.join(HERE, target)], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"kustomize failed for {target}:\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def lookup(doc, dotted):
    value = doc
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def secret_file(spec, container, path):
    """(Secret name, key) of the file at `path` when a Secret volume mounted in `container` holds it."""
    volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        root = mount["mountPath"].rstrip("/") + "/"
        secret = volumes.get(mount["name"], {}).get("secret")
        if secret is None or not path.startswith(root) or mount.get("subPath"):
            continue
        relative = path[len(root):]
        items = secret.get("items")
        if items is None:
            return secret["secretName"], relative
        for item in items:
            if item["path"] == relative:
                return secret["secretName"], item["key"]
    return None


def secret_settings(cache=[]):
    """The variables the Swift code reads as secrets (SettingsReader's secret readers), e.g. DATABASE_URL."""
    if not cache:
        reader = re.compile(r'\b(?:secretText|secretList|requiredSecret|secret)\(\s*"([a-z.]+)"'
                            r'|\brequired\(\s*"([a-z.]+)",\s*secret: true')
        names = set()
        for folder in ("Sources", "Services"):
            for directory, _, files in os.walk(os.path.join(REPOSITORY, folder)):
                for file in files:
                    if file.endswith(".swift"):
                        with open(os.path.join(directory, file), encoding="utf-8") as handle:
                            for match in reader.finditer(handle.read()):
                                names.add((match.group(1) or match.group(2)).upper().replace(".", "_"))
        cache.append(names)
    return cache[0]


def is_secret(variable):
    return variable in secret_settings() or bool(set(variable.split("_")) & SECRET_WORDS)


def check_secret_variables(where, spec, container, config_maps, errors):
    """Secrets reach a container as files of mounted Secrets (`NAME_FILE`) or through secretKeyRef, never as
    literal values (in its env or in a ConfigMap it loads); postgres:// URLs take their password from a
    secretKeyRef variable."""
    literal = {}
    from_secret = {v["name"] for v in container.get("env", []) if lookup(v, "valueFrom.secretKeyRef")}
    for source in container.get("envFrom", []):
        if lookup(source, "secretRef"):
            errors.append(f"{where}: envFrom secretRef exposes every key of a Secret; mount the keys it needs as files")
        literal.update(config_maps.get(lookup(source, "configMapRef.name"), {}))
    literal.update({v["name"]: v["value"] for v in container.get("env", []) if "value" in v})
    for variable, value in literal.items():
        passwords = re.findall(r"^postgres(?:ql)?://[^:/@]+:([^@]*)@", value)
        if variable.endswith("_FILE"):
            if is_secret(variable[: -len("_FILE")]) and secret_file(spec, container, value) is None:
                errors.append(f"{where}: {variable} ({value}) is not a file of a mounted Secret")
        elif passwords:
            reference = re.fullmatch(r"\$\(([A-Z_][A-Z0-9_]*)\)", passwords[0])
            if not reference or reference.group(1) not in from_secret:
                errors.append(f"{where}: {variable} holds a literal password; take it from a secretKeyRef variable")
        elif is_secret(variable):
            errors.append(f"{where}: {variable} must come from a mounted Secret ({variable}_FILE) or a "
                          "secretKeyRef, not a literal value")


def check_secret_volumes(name, spec, errors):
    """Secret files must be readable by the container's user: world-readable, or through fsGroup."""
    for volume in spec.get("volumes", []):
        secret = volume.get("secret")
        if secret is None:
            continue
        modes = [secret.get("defaultMode", 0o644)] + [item["mode"] for item in secret.get("items", []) if "mode" in item]
        if any(mode & 0o004 == 0 for mode in modes) and "fsGroup" not in spec.get("securityContext", {}):
            errors.append(f"{name}: Secret volume {volume['name']} is not world-readable and the pod sets no fsGroup")


def check_pod_spec(name, spec, errors, config_maps=None):
    pod_security = spec.get("securityContext", {})
    if not pod_security.get("runAsNonRoot"):
        errors.append(f"{name}: pod securityContext.runAsNonRoot must be true")
    if lookup(pod_security, "seccompProfile.type") != "RuntimeDefault":
        errors.append(f"{name}: pod seccompProfile must be RuntimeDefault")
    if spec.get("automountServiceAccountToken") is not False:
        errors.append(f"{name}: automountServiceAccountToken must be false")
    for container in spec.get("containers", []) + spec.get("initContainers", []):
        where = f"{name}/{container['name']}"
        security = container.get("securityContext", {})
        if security.get("allowPrivilegeEscalation") is not False:
            errors.append(f"{where}: allowPrivilegeEscalation must be false")
        if security.get("readOnlyRootFilesystem") is not True:
            errors.append(f"{where}: readOnlyRootFilesystem must be true")
        if lookup(security, "capabilities.drop") != ["ALL"]:
            errors.append(f"{where}: capabilities must drop ALL")
        resources = container.get("resources", {})
        for kind in ("requests", "limits"):
            for resource in ("cpu", "memory"):
                if resource not in resources.get(kind, {}):
                    errors.append(f"{where}: resources.{kind}.{resource} missing")
        check_secret_variables(where, spec, container, config_maps or {}, errors)
    check_secret_volumes(name, spec, errors)


def check_deployment(doc, errors, config_maps=None):
    name = doc["metadata"]["name"]
    spec = doc["spec"]["template"]["spec"]
    check_pod_spec(f"Deployment {name}", spec, errors, config_maps)
    latchkey = [c for c in spec["containers"] if c["image"].split("/")[-1].startswith("latchkey")]
    if not latchkey:
        errors.append(f"Deployment {name}: runs no Latchkey container")
    for container in latchkey:
        if lookup(container, "livenessProbe.httpGet.path") != "/healthz":
            errors.append(f"Deployment {name}/{container['name']}: liveness probe must be GET /healthz")
        if lookup(container, "readinessProbe.httpGet.path") != "/readyz":
            errors.append(f"Deployment {name}/{container['name']}: readiness probe must be GET /readyz")
        # Health and metrics are served on the management port only; the service port never answers them.
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            if probe in container and lookup(container, f"{probe}.httpGet.port") != "management":
                errors.append(f"Deployment {name}/{container['name']}: {probe} must use the port named management")
        if "management" not in [port.get("name") for port in container.get("ports", [])]:
            errors.append(f"Deployment {name}/{container['name']}: no container port named management")
        check_ports(f"Deployment {name}/{container['name']}", container, config_maps or {}, errors)


def check_ports(where, container, config_maps, errors):
    """The ports a service listens on are the ports the pod declares: `http` is HTTP_PORT, `management` is
    MANAGEMENT_PORT or, unset, the service's default of HTTP_PORT + 1000."""
    env = container_environment(container, config_maps)
    declared = {port.get("name"): port.get("containerPort") for port in container.get("ports", [])}
    if "HTTP_PORT" not in env:
        errors.append(f"{where}: sets no HTTP_PORT, so its ports depend on a default")
        return
    http = int(env["HTTP_PORT"])
    management = int(env.get("MANAGEMENT_PORT") or http + 1000)
    if declared.get("http") != http:
        errors.append(f"{where}: container port http is {declared.get('http')}, the service listens on {http}")
    if "management" in declared and declared["management"] != management:
        errors.append(f"{where}: container port management is {declared['management']}, "
                      f"the service listens on {management} (HTTP_PORT + 1000 unless MANAGEMENT_PORT is set)")


def read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def strip_descriptions(node):
    if isinstance(node, dict):
        return {key: strip_descriptions(value) for key, value in node.items() if key != "description"}
    if isinstance(node, list):
        return [strip_descriptions(item) for item in node]
    return node


def import_crds(paths):
    """Writes the schema of every served version of each CRD file to crds/<group>_<kind>.<version>.json."""
    os.makedirs(CRDS, exist_ok=True)
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            crds = list(yaml.safe_load_all(handle))
        for crd in crds:
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                if not version.get("served"):
                    continue
                name = f"{group}_{kind}.{version['name']}.json"
                with open(os.path.join(CRDS, name), "w", encoding="utf-8") as out:
                    json.dump(strip_descriptions(version["schema"]["openAPIV3Schema"]), out, sort_keys=True,
                              separators=(",", ":"))
                    out.write("\n")
                print(f"wrote crds/{name}")


def strict(schema):
    """The API server's view of a structural schema: fields it does not declare are rejected."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: strict(value) for key, value in schema.items()}
    if (result.get("type") == "object" and "properties" in result and "additionalProperties" not in result
            and not result.get("x-kubernetes-preserve-unknown-fields")):
        result["additionalProperties"] = False
    if result.get("x-kubernetes-int-or-string"):
        result.pop("type", None)
        result["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return result


def crd_schema(api_version, kind, cache={}):
    group, _, version = api_version.rpartition("/")
    path = os.path.join(CRDS, f"{group}_{kind}.{version}.json")
    if path not in cache:
        cache[path] = strict(read_json(path)) if os.path.exists(path) else None
    return cache[path]


def check_custom_resource(target, doc, errors):
    import jsonschema

    kind, name = doc["kind"], doc["metadata"]["name"]
    schema = crd_schema(doc["apiVersion"], kind)
    if schema is None:
        errors.append(f"{target}: {kind} {name}: no CRD schema for {doc['apiVersion']} in infra/k8s/crds")
        return
    for error in jsonschema.Draft7Validator(schema).iter_errors(doc):
        errors.append(f"{target}: {kind} {name}: {error.message} at {'.'.join(map(str, error.path))}")


def container_environment(container, config_maps):
    """The container's variables, with envFrom ConfigMaps and $(VAR) references resolved."""
    values = {}
    for source in container.get("envFrom", []):
        ref = lookup(source, "configMapRef.name")
        values.update(config_maps.get(ref, {}))
    for variable in container.get("env", []):
        if "value" in variable:
            values[variable["name"]] = re.sub(r"\$\(([A-Z_][A-Z0-9_]*)\)",
                                              lambda m: values.get(m.group(1), m.group(0)), variable["value"])
        else:
            values[variable["name"]] = None  # from a Secret
    return values


def url_host_and_pool(url):
    parts = urlsplit(url)
    return parts.hostname, int(parse_qs(parts.query).get("pool_max", [DEFAULT_POOL_MAX])[0])


def check_versions(target, kinds, errors):
    """Strimzi's Kafka on a version the tested release supports, compose on the same; backups through the plugin."""
    for kafka in kinds.get("Kafka", []):
        version = lookup(kafka, "spec.kafka.version")
        metadata = lookup(kafka, "spec.kafka.metadataVersion")
        if version not in TESTED["kafka"]:
            errors.append(f"{target}: Kafka {version} is not supported by Strimzi {TESTED['strimzi']}")
        elif metadata != TESTED["kafka"][version]:
            errors.append(f"{target}: Kafka {version} takes metadataVersion {TESTED['kafka'][version]}, not {metadata}")
        for pattern, where in ((r"apache/kafka:([0-9.]+)", "docker-compose.yml"), (r"apache/kafka:([0-9.]+)", ".env.example")):
            with open(os.path.join(REPOSITORY, where), encoding="utf-8") as handle:
                images = set(re.findall(pattern, handle.read()))
            if images != {version}:
                errors.append(f"{target}: {where} runs apache/kafka {sorted(images)}, Strimzi's Kafka is {version}")
    stores = {d["metadata"]["name"] for d in kinds.get("ObjectStore", [])}
    for cluster in kinds.get("Cluster", []):
        name = cluster["metadata"]["name"]
        if lookup(cluster, "spec.backup.barmanObjectStore") is not None:
            errors.append(f"{target}: Cluster {name}: backups go through the Barman Cloud plugin, not spec.backup")
        archivers = [p for p in cluster["spec"].get("plugins", []) if p.get("name") == BARMAN_PLUGIN and p.get("isWALArchiver")]
        if len(archivers) != 1:
            errors.append(f"{target}: Cluster {name}: needs the {BARMAN_PLUGIN} plugin as its WAL archiver")
        elif lookup(archivers[0], "parameters.barmanObjectName") not in stores:
            errors.append(f"{target}: Cluster {name}: its barmanObjectName is not an ObjectStore here")
        backups = [b for b in kinds.get("ScheduledBackup", []) if lookup(b, "spec.cluster.name") == name]
        if not any(b["spec"].get("method") == "plugin" and lookup(b, "spec.pluginConfiguration.name") == BARMAN_PLUGIN
                   for b in backups):
            errors.append(f"{target}: Cluster {name}: no ScheduledBackup with method plugin ({BARMAN_PLUGIN})")


def check_database_tls(where, variable, url, spec, container, clusters, poolers, errors):
    """TLS verified against CloudNativePG's CA, to a host the server certificate names (the Pooler serves the
    cluster's certificate, so its service must be among the certificate's serverAltDNSNames)."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if query.get("sslmode") != ["verify-full"]:
        errors.append(f"{where}: {variable} must set sslmode=verify-full")
    host = parts.hostname
    cluster = host[:-3] if host.endswith("-rw") and host[:-3] in clusters else lookup(poolers.get(host, {}), "spec.cluster.name")
    if cluster not in clusters:
        return
    names = {f"{cluster}-rw", f"{cluster}-r", f"{cluster}-ro"} | set(
        lookup(clusters[cluster], "spec.certificates.serverAltDNSNames") or [])
    if host not in names:
        errors.append(f"{where}: {variable}: {host} is not a name in {cluster}'s server certificate (serverAltDNSNames)")
    root = query.get("sslrootcert", [""])[0]
    ca_secret = lookup(clusters[cluster], "spec.certificates.serverCASecret") or f"{cluster}-ca"
    if secret_file(spec, container, root) != (ca_secret, "ca.crt"):
        errors.append(f"{where}: {variable}: sslrootcert ({root or 'unset'}) must be ca.crt of the mounted Secret {ca_secret}")


def check_database_connections(target, kinds, errors):
    """Request traffic through the transaction-mode Pooler, sessions on -rw, no database for the sidecar,
    and every pool at its HPA maximum within max_connections."""
    config_maps = {}
    for config_map in kinds.get("ConfigMap", []):
        config_maps[config_map["metadata"]["name"]] = config_map.get("data", {})
    clusters = {c["metadata"]["name"]: c for c in kinds.get("Cluster", [])}
    poolers = {p["metadata"]["name"]: p for p in kinds.get("Pooler", [])}
    hpa_max = {h["spec"]["scaleTargetRef"]["name"]: h["spec"]["maxReplicas"] for h in kinds.get("HorizontalPodAutoscaler", [])}
    for pooler in poolers.values():
        where = f"{target}: Pooler {pooler['metadata']['name']}"
        if lookup(pooler, "spec.pgbouncer.poolMode") != "transaction" or pooler["spec"].get("type", "rw") != "rw":
            errors.append(f"{where}: must be a transaction-mode pool in front of the primary (type rw)")
        if lookup(pooler, "spec.cluster.name") not in clusters:
            errors.append(f"{where}: its cluster is not a Cluster here")
    direct = {name: 0 for name in clusters}
    pooled_clients = {name: 0 for name in poolers}
    workloads = [(d["metadata"]["name"], d["spec"]["template"]["spec"], hpa_max.get(d["metadata"]["name"], d["spec"].get("replicas", 1)))
                 for d in kinds.get("Deployment", [])]
    workloads += [(j["metadata"]["name"], j["spec"]["template"]["spec"], j["spec"].get("parallelism", 1)) for j in kinds.get("Job", [])]
    for workload, spec, replicas in workloads:
        for container in spec.get("containers", []):
            env = container_environment(container, config_maps)
            where = f"{target}: {workload}/{container['name']}"
            if container["name"] == "dpop-verifier":
                if any(name.startswith("DATABASE_") for name in env):
                    errors.append(f"{where}: the sidecar has no database; it must get no DATABASE_* variable")
                continue
            for variable in ("DATABASE_URL", "DATABASE_SYSTEM_URL", "DATABASE_MIGRATION_URL"):
                if not env.get(variable):
                    continue
                host, pool = url_host_and_pool(env[variable])
                if "$(" in (host or ""):
                    errors.append(f"{where}: {variable} has an unresolved reference: {host}")
                    continue
                check_database_tls(where, variable, env[variable], spec, container, clusters, poolers, errors)
                if host in poolers:
                    if variable != "DATABASE_URL":
                        errors.append(f"{where}: {variable} needs a session (advisory locks, SET): use the -rw service, not {host}")
                    pooled_clients[host] += replicas * pool
                elif host.endswith("-rw") and host[:-3] in clusters:
                    if variable == "DATABASE_URL" and poolers:
                        errors.append(f"{where}: DATABASE_URL (request traffic) must go through the Pooler, not {host}")
                    direct[host[:-3]] += replicas * pool
                else:
                    errors.append(f"{where}: {variable} points at {host}, neither a Pooler nor a Cluster's -rw service")
    for name, pooler in poolers.items():
        parameters = lookup(pooler, "spec.pgbouncer.parameters") or {}
        instances = pooler["spec"].get("instances", 1)
        per_instance = int(parameters.get("max_db_connections") or 0) or (
            int(parameters.get("default_pool_size", 20)) + int(parameters.get("reserve_pool_size", 0)))
        # Only latchkey_app goes through it: one database and one user, so one pool per instance.
        direct[pooler["spec"]["cluster"]["name"]] += instances * per_instance
        # Named prepared statements through transaction pooling need PgBouncer to track them.
        if int(parameters.get("max_prepared_statements") or 0) <= 0:
            errors.append(f"{target}: Pooler {name}: max_prepared_statements must be above 0: the services' "
                          "request statements are named prepared statements")
        max_client = int(parameters.get("max_client_conn", 100))
        if pooled_clients[name] > max_client:
            errors.append(f"{target}: Pooler {name}: {pooled_clients[name]} client connections at HPA maximum "
                          f"exceed max_client_conn {max_client} of one instance")
    for name, cluster in clusters.items():
        limit = int(lookup(cluster, "spec.postgresql.parameters.max_connections") or 100)
        needed = direct[name] + RESERVED_CONNECTIONS
        if needed > limit:
            errors.append(f"{target}: Cluster {name}: pools at HPA maximum need {needed} connections "
                          f"(with {RESERVED_CONNECTIONS} reserved), max_connections is {limit}")


def check_kafka_security(target, kinds, errors, facts):
    """Kafka only through an authenticated TLS listener with ACLs; each service as its own KafkaUser whose
    ACLs are exactly what its code uses; the password and the cluster CA from mounted Secret files."""
    config_maps = {c["metadata"]["name"]: c.get("data", {}) for c in kinds.get("ConfigMap", [])}
    prefix = config_maps.get("latchkey-config", {}).get("KAFKA_TOPIC_PREFIX", "latchkey.")
    expected = kafka_access.expected_acls(prefix, facts)
    clusters = {k["metadata"]["name"]: k for k in kinds.get("Kafka", [])}
    listeners = {}
    for name, kafka in clusters.items():
        if lookup(kafka, "spec.kafka.authorization.type") != "simple":
            errors.append(f"{target}: Kafka {name}: authorization must be type simple (ACLs)")
        for listener in lookup(kafka, "spec.kafka.listeners") or []:
            if not listener.get("tls") or lookup(listener, "authentication.type") != "scram-sha-512":
                errors.append(f"{target}: Kafka {name}: listener {listener.get('name')} must use TLS and "
                              "scram-sha-512 authentication")
            else:
                listeners[(f"{name}-kafka-bootstrap", str(listener["port"]))] = name
        if kinds.get("KafkaUser") and lookup(kafka, "spec.entityOperator.userOperator") is None:
            errors.append(f"{target}: Kafka {name}: KafkaUsers need the User Operator (entityOperator.userOperator)")
    users = {u["metadata"]["name"]: u for u in kinds.get("KafkaUser", [])}
    for name, user in users.items():
        where = f"{target}: KafkaUser {name}"
        if user["metadata"].get("labels", {}).get("strimzi.io/cluster") not in clusters:
            errors.append(f"{where}: its strimzi.io/cluster label names no Kafka here")
        if lookup(user, "spec.authentication.type") != "scram-sha-512":
            errors.append(f"{where}: authentication must be scram-sha-512 (the services connect with SASL SCRAM)")
        if lookup(user, "spec.authorization.type") != "simple":
            errors.append(f"{where}: authorization must be type simple")
        _, other = kafka_access.granted_acls(user)
        if other:
            errors.append(f"{where}: deny rules and host restrictions are not expected: {other}")
    used = set()
    workloads = [(f"Deployment {d['metadata']['name']}", d["spec"]["template"]["spec"]) for d in kinds.get("Deployment", [])]
    workloads += [(f"Job {j['metadata']['name']}", j["spec"]["template"]["spec"]) for j in kinds.get("Job", [])]
    for workload, spec in workloads:
        for container in spec.get("containers", []):
            service = (container.get("command") or [""])[0]
            if service not in KAFKA_SERVICES:
                continue
            where = f"{target}: {workload}/{container['name']}"
            env = container_environment(container, config_maps)
            if env.get("KAFKA_SECURITY_PROTOCOL") != "SASL_SSL" or env.get("KAFKA_SASL_MECHANISM") != "SCRAM-SHA-512":
                errors.append(f"{where}: Kafka must be reached with KAFKA_SECURITY_PROTOCOL=SASL_SSL and "
                              "KAFKA_SASL_MECHANISM=SCRAM-SHA-512")
            brokers = [tuple(b.strip().rsplit(":", 1)) for b in (env.get("KAFKA_BROKERS") or "").split(",") if b.strip()]
            if not brokers or any(broker not in listeners for broker in brokers):
                errors.append(f"{where}: KAFKA_BROKERS ({env.get('KAFKA_BROKERS')}) must be the bootstrap service "
                              "and port of a TLS + SCRAM listener")
            username = env.get("KAFKA_SASL_USERNAME")
            if username not in users:
                errors.append(f"{where}: KAFKA_SASL_USERNAME ({username}) is not a KafkaUser here")
            else:
                used.add(username)
                granted, _ = kafka_access.granted_acls(users[username])
                for acl in sorted(expected[service] - granted):
                    errors.append(f"{where}: KafkaUser {username} lacks {acl[3]} on {acl[0]} {acl[1]} ({acl[2]}), "
                                  f"which {service} uses")
                for acl in sorted(granted - expected[service]):
                    errors.append(f"{where}: KafkaUser {username} grants {acl[3]} on {acl[0]} {acl[1]} ({acl[2]}), "
                                  f"which {service} does not use")
            if "KAFKA_SASL_PASSWORD" in env:
                errors.append(f"{where}: the Kafka password must come from KAFKA_SASL_PASSWORD_FILE")
            password = env.get("KAFKA_SASL_PASSWORD_FILE") or ""
            if secret_file(spec, container, password) != (username, "password"):
                errors.append(f"{where}: KAFKA_SASL_PASSWORD_FILE ({password or 'unset'}) must be the password "
                              f"of the mounted Secret {username}")
            ca = env.get("KAFKA_SSL_CA_LOCATION") or ""
            cas = {(f"{name}-cluster-ca-cert", "ca.crt") for name in clusters}
            if secret_file(spec, container, ca) not in cas:
                errors.append(f"{where}: KAFKA_SSL_CA_LOCATION ({ca or 'unset'}) must be ca.crt of a mounted "
                              "<cluster>-cluster-ca-cert Secret")
    for name in sorted(users.keys() - used):
        errors.append(f"{target}: KafkaUser {name} is used by no Deployment (a credential nothing needs)")


def exported_metrics():
    """The metric names the Swift code registers: string literals naming metrics (swift-metrics labels,
    the Prometheus names given to Hummingbird's metrics) and the sidecar's `name(metric, unit, help)`
    descriptors, which swift-prometheus joins as latchkey_dpop_<metric>_<unit>."""
    names = set()
    literal = re.compile(r'"((?:latchkey|kafka)_[a-z0-9_]+)"')
    descriptor = re.compile(r'\bname\(\s*"([a-z0-9_]+)",\s*"([a-z0-9_]*)"', re.S)
    for folder in ("Sources", "Services"):
        for directory, _, files in os.walk(os.path.join(REPOSITORY, folder)):
            for file in files:
                if not file.endswith(".swift"):
                    continue
                with open(os.path.join(directory, file), encoding="utf-8") as handle:
                    text = handle.read()
                names.update(literal.findall(text))
                if "MetricNameDescriptor" in text:
                    for metric, unit in descriptor.findall(text):
                        names.add("_".join(part for part in ("latchkey", "dpop", metric, unit) if part))
    return names


def queried_metrics(expression):
    """The metric names a PromQL expression reads (histogram series by their base name)."""
    names = set()
    for name in re.findall(r"\b((?:latchkey|kafka)_[a-z0-9_]+)\b", expression):
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and not name.endswith("_total" + suffix):
                name = name[: -len(suffix)]
                break
        names.add(name)
    return names


def check_monitoring(kinds, target, errors):
    exported = exported_metrics()
    monitors = kinds.get("ServiceMonitor", [])
    if not monitors:
        errors.append(f"{target}: no ServiceMonitor")
    scraped = set()
    for monitor in monitors:
        selector = lookup(monitor, "spec.selector.matchLabels") or {}
        ports = {endpoint.get("port") for endpoint in monitor["spec"]["endpoints"]}
        if "management" not in ports:
            errors.append(f"{target}: ServiceMonitor {monitor['metadata']['name']} must scrape the port named management")
        for service in kinds.get("Service", []):
            labels = service["metadata"].get("labels", {})
            if all(labels.get(key) == value for key, value in selector.items()) and any(
                port.get("name") == "management" and port.get("targetPort") == "management"
                for port in service["spec"].get("ports", [])
            ):
                scraped.add(service["spec"].get("selector", {}).get("app.kubernetes.io/name"))
    for deployment in kinds.get("Deployment", []):
        if deployment["metadata"]["name"] not in scraped:
            errors.append(f"{target}: Deployment {deployment['metadata']['name']}: management port not scraped by a ServiceMonitor")
    rules = [rule for doc in kinds.get("PrometheusRule", []) for group in doc["spec"]["groups"] for rule in group["rules"]]
    if not rules:
        errors.append(f"{target}: no PrometheusRule with rules")
    for rule in rules:
        for name in sorted(queried_metrics(rule["expr"]) - exported):
            errors.append(f"{target}: alert {rule.get('alert')}: {name} is not a metric the services export")
    dashboards = [doc for doc in kinds.get("ConfigMap", []) if doc["metadata"].get("labels", {}).get("grafana_dashboard")]
    if not dashboards:
        errors.append(f"{target}: no Grafana dashboard ConfigMap")
    for doc in dashboards:
        for file, text in doc.get("data", {}).items():
            dashboard = json.loads(text)
            panels = dashboard.get("panels", [])
            for panel in panels:
                for query in panel.get("targets", []):
                    for name in sorted(queried_metrics(query.get("expr", "")) - exported):
                        errors.append(f"{target}: dashboard {file}, panel '{panel.get('title')}': {name} is not a metric the services export")


def validate_target(target, version, errors):
    docs = render(target)
    validate_documents(target, docs, version, errors)
    return len(docs)


def validate_documents(target, docs, version, errors, facts=None):
    """Every check on one rendered target; `facts` (kafka_access.code_facts) are read from the code by default."""
    import kubernetes_validate

    facts = facts or kafka_access.code_facts()
    kinds = {}
    for doc in docs:
        for field in ("apiVersion", "kind", "metadata"):
            if field not in doc:
                errors.append(f"{target}: a document without {field}")
        if not lookup(doc, "metadata.name"):
            errors.append(f"{target}: {doc.get('kind')} without metadata.name")
            continue
        kind, name = doc["kind"], doc["metadata"]["name"]
        kinds.setdefault(kind, []).append(doc)
        custom = CUSTOM_KINDS.get((doc["apiVersion"], kind))
        if custom is not None:
            for path in custom:
                if lookup(doc, path) is None:
                    errors.append(f"{target}: {kind} {name}: {path} missing")
            check_custom_resource(target, doc, errors)
            continue
        group = doc["apiVersion"].rpartition("/")[0]
        if "." in group and not group.endswith("k8s.io"):
            errors.append(f"{target}: {kind} {name}: unknown custom resource {doc['apiVersion']}")
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            errors.append(f"{target}: {kind} {name}: {error.message} at {'.'.join(map(str, error.path))}")
        except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as error:
            errors.append(f"{target}: {kind} {name}: no schema: {error}")

    config_maps = {c["metadata"]["name"]: c.get("data", {}) for c in kinds.get("ConfigMap", [])}
    deployments = {d["metadata"]["name"]: d for d in kinds.get("Deployment", [])}
    for doc in deployments.values():
        check_deployment(doc, errors, config_maps)
    for job in kinds.get("Job", []):
        check_pod_spec(f"Job {job['metadata']['name']}", job["spec"]["template"]["spec"], errors, config_maps)
    pdbs = {d["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/name") for d in kinds.get("PodDisruptionBudget", [])}
    hpas = {d["spec"]["scaleTargetRef"]["name"] for d in kinds.get("HorizontalPodAutoscaler", [])}
    for name in deployments:
        if name not in pdbs:
            errors.append(f"{target}: Deployment {name} has no PodDisruptionBudget")
        if name not in hpas:
            errors.append(f"{target}: Deployment {name} has no HorizontalPodAutoscaler")
    for name in ("registration-gateway", "token-service", "audit-consumer", "example-api"):
        if name not in deployments:
            errors.append(f"{target}: Deployment {name} missing")
    sidecars = [c["name"] for c in deployments.get("example-api", {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])]
    if "dpop-verifier" not in sidecars or len(sidecars) < 2:
        errors.append(f"{target}: example-api must run dpop-verifier as a second container")
    if not any(d["spec"].get("podSelector") == {} and d["spec"].get("policyTypes") == ["Ingress"] and not d["spec"].get("ingress")
               for d in kinds.get("NetworkPolicy", [])):
        errors.append(f"{target}: no default-deny ingress NetworkPolicy")
    topics = {d["spec"]["topicName"] for d in kinds.get("KafkaTopic", [])}
    prefix = config_maps.get("latchkey-config", {}).get("KAFKA_TOPIC_PREFIX", "latchkey.")
    wanted = {prefix + name for name in facts["events"] + [facts["dead_letter"]]}
    if topics != wanted:
        errors.append(f"{target}: KafkaTopics {sorted(topics)} differ from the code's {sorted(wanted)}")
    if not kinds.get("Job"):
        errors.append(f"{target}: no migration Job")
    check_versions(target, kinds, errors)
    check_database_connections(target, kinds, errors)
    check_monitoring(kinds, target, errors)
    check_kafka_security(target, kinds, errors, facts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubernetes-version", default="1.30.0")
    parser.add_argument("--import-crd", nargs="+", metavar="CRD_YAML",
                        help="store the schemas of these CustomResourceDefinition files in crds/ and exit")
    args = parser.parse_args()
    if args.import_crd:
        import_crds(args.import_crd)
        return 0
    failed = False
    for target in TARGETS:
        errors = []
        try:
            count = validate_target(target, args.kubernetes_version, errors)
        except RuntimeError as error:
            errors.append(str(error))
            count = 0
        for error in errors:
            print(f"  ✗ {error}")
        print(f"{'FAIL' if errors else 'ok  '} infra/k8s/{target}: {count} resources")
        failed |= bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
