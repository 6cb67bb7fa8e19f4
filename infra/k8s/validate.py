#!/usr/bin/env python3
"""Offline validation of the Kubernetes manifests (used by scripts/validate-deploy.sh).

Renders the base and every overlay with `kubectl kustomize` (or a `kustomize` binary), validates
each core resource against the Kubernetes JSON schemas of kubernetes-validate (strict: unknown
fields are errors), checks the custom resources (Strimzi, CloudNativePG) structurally, and checks
the rules the deployment promises: probes, resources, hardened security contexts, secrets only by
reference, a PodDisruptionBudget and an HPA for every Deployment, a default-deny NetworkPolicy, every
Deployment's management port scraped by the ServiceMonitor, and every metric the alerting rules and the
Grafana dashboard query exported by the code.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import kubernetes_validate
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGETS = ["base", "overlays/dev", "overlays/prod"]
# Custom resources: no schema offline, so the fields the operators need are checked here.
CUSTOM_KINDS = {
    ("kafka.strimzi.io/v1beta2", "KafkaTopic"): ["spec.topicName", "spec.partitions", "spec.replicas"],
    ("kafka.strimzi.io/v1beta2", "Kafka"): ["spec.kafka.listeners"],
    ("kafka.strimzi.io/v1beta2", "KafkaNodePool"): ["spec.replicas", "spec.roles", "spec.storage"],
    ("postgresql.cnpg.io/v1", "Cluster"): ["spec.instances", "spec.storage.size", "spec.bootstrap.initdb.owner"],
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ["spec.selector.matchLabels", "spec.endpoints"],
    ("monitoring.coreos.com/v1", "PrometheusRule"): ["spec.groups"],
}
EXPECTED_TOPICS = {
    "latchkey.client-registered", "latchkey.token-issued", "latchkey.client-revoked", "latchkey.client-updated",
    "latchkey.user-registered", "latchkey.token-revoked", "latchkey.refresh-token-reuse-detected",
    "latchkey.user-disabled", "latchkey.dead-letter",
}
SECRET_WORDS = {"SECRET", "KEY", "PASSWORD", "TOKEN"}


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


def check_pod_spec(name, spec, errors):
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
        for variable in container.get("env", []):
            if set(variable["name"].split("_")) & SECRET_WORDS and "value" in variable:
                errors.append(f"{where}: {variable['name']} must come from a secretKeyRef, not a literal value")


def check_deployment(doc, errors):
    name = doc["metadata"]["name"]
    spec = doc["spec"]["template"]["spec"]
    check_pod_spec(f"Deployment {name}", spec, errors)
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


def exported_metrics():
    """The metric names the Swift code registers: string literals naming metrics (swift-metrics labels,
    the Prometheus names given to Hummingbird's metrics) and the sidecar's `name(metric, unit, help)`
    descriptors, which swift-prometheus joins as latchkey_dpop_<metric>_<unit>."""
    names = set()
    literal = re.compile(r'"((?:latchkey|kafka)_[a-z0-9_]+)"')
    descriptor = re.compile(r'\bname\(\s*"([a-z0-9_]+)",\s*"([a-z0-9_]*)"', re.S)
    for folder in ("Sources", "Services"):
        for directory, _, files in os.walk(os.path.join(ROOT, folder)):
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

    deployments = {d["metadata"]["name"]: d for d in kinds.get("Deployment", [])}
    for doc in deployments.values():
        check_deployment(doc, errors)
    for job in kinds.get("Job", []):
        check_pod_spec(f"Job {job['metadata']['name']}", job["spec"]["template"]["spec"], errors)
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
    if topics != EXPECTED_TOPICS:
        errors.append(f"{target}: KafkaTopics {sorted(topics)} differ from {sorted(EXPECTED_TOPICS)}")
    if not kinds.get("Job"):
        errors.append(f"{target}: no migration Job")
    check_monitoring(kinds, target, errors)
    return len(docs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubernetes-version", default="1.30.0")
    args = parser.parse_args()
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
