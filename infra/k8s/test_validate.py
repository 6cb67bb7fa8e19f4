"""Tests of validate.py's checks (Kafka, secrets, database TLS and routing, ports, versions, backups,
monitoring): the base renders clean, and each broken variant of it fails with the error that names the problem. Run by scripts/validate-deploy.sh:
    python3 -m unittest discover -s infra/k8s -p 'test_*.py'
"""
import copy
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kafka_access  # noqa: E402
import validate  # noqa: E402

RENDERED = validate.render("base")


def find(docs, kind, name):
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def container(docs, deployment, name=None):
    spec = find(docs, "Deployment", deployment)["spec"]["template"]["spec"]
    return next(c for c in spec["containers"] if c["name"] == (name or deployment))


def set_env(target, name, value):
    target["env"] = [v for v in target["env"] if v["name"] != name] + [{"name": name, "value": value}]


class ValidateTests(unittest.TestCase):
    def errors(self, mutate=None, facts=None):
        docs = copy.deepcopy(RENDERED)
        if mutate:
            mutate(docs)
        errors = []
        validate.validate_documents("base", docs, "1.30.0", errors, facts=facts)
        return errors

    def assertFails(self, expected, mutate=None, facts=None):
        errors = self.errors(mutate, facts)
        self.assertTrue(any(expected in error for error in errors), f"no error with {expected!r} in {errors}")

    def test_the_base_passes(self):
        self.assertEqual(self.errors(), [])

    def test_kafka_user_against_its_crd_schema(self):
        def singular_operation(docs):
            acl = find(docs, "KafkaUser", "token-service")["spec"]["authorization"]["acls"][0]
            acl["operation"] = acl.pop("operations")[0]  # the pre-v1 field
        self.assertFails("KafkaUser token-service: Additional properties are not allowed", singular_operation)

    def test_a_topic_added_to_the_code_must_be_granted(self):
        facts = kafka_access.code_facts()
        facts["events"] = facts["events"] + ["session-started"]
        self.assertFails("KafkaUser audit-consumer lacks Read on topic latchkey.session-started", facts=facts)
        self.assertFails("KafkaUser token-service lacks Write on topic latchkey.session-started", facts=facts)

    def test_missing_and_extra_acls(self):
        def drop_group(docs):
            acls = find(docs, "KafkaUser", "audit-consumer")["spec"]["authorization"]["acls"]
            acls[:] = [a for a in acls if a["resource"]["type"] != "group"]
        self.assertFails("KafkaUser audit-consumer lacks Read on group audit-consumer", drop_group)

        def sidecar_writes(docs):
            find(docs, "KafkaUser", "dpop-verifier")["spec"]["authorization"]["acls"].append(
                {"resource": {"type": "topic", "name": "latchkey.dead-letter"}, "operations": ["Write"]})
        self.assertFails("KafkaUser dpop-verifier grants Write on topic latchkey.dead-letter", sidecar_writes)

        def whole_prefix(docs):
            find(docs, "KafkaUser", "registration-gateway")["spec"]["authorization"]["acls"].append(
                {"resource": {"type": "topic", "name": "latchkey.", "patternType": "prefix"}, "operations": ["All"]})
        self.assertFails("grants All on topic latchkey. (prefix)", whole_prefix)

    def test_kafka_clients_use_sasl_ssl_as_their_own_user(self):
        self.assertFails(
            "token-service/token-service: Kafka must be reached with KAFKA_SECURITY_PROTOCOL=SASL_SSL",
            lambda docs: set_env(container(docs, "token-service"), "KAFKA_SECURITY_PROTOCOL", "PLAINTEXT"))
        self.assertFails(
            "KAFKA_SASL_USERNAME (latchkey) is not a KafkaUser here",
            lambda docs: set_env(container(docs, "audit-consumer"), "KAFKA_SASL_USERNAME", "latchkey"))
        # Another service's user: its ACLs are not the audit consumer's.
        self.assertFails(
            "KafkaUser token-service lacks Read on group audit-consumer",
            lambda docs: set_env(container(docs, "audit-consumer"), "KAFKA_SASL_USERNAME", "token-service"))
        self.assertFails(
            "must be the bootstrap service and port of a TLS + SCRAM listener",
            lambda docs: set_env(container(docs, "example-api", "dpop-verifier"), "KAFKA_BROKERS", "latchkey-kafka-kafka-bootstrap:9092"))

    def test_password_and_ca_from_the_right_secrets(self):
        def other_users_password(docs):
            volumes = find(docs, "Deployment", "registration-gateway")["spec"]["template"]["spec"]["volumes"]
            next(v for v in volumes if v["name"] == "kafka-user")["secret"]["secretName"] = "token-service"
        self.assertFails("KAFKA_SASL_PASSWORD_FILE (/var/run/secrets/latchkey/kafka-user/password) must be the "
                         "password of the mounted Secret registration-gateway", other_users_password)

        def no_ca_mount(docs):
            target = container(docs, "audit-consumer")
            target["volumeMounts"] = [m for m in target["volumeMounts"] if m["name"] != "kafka-ca"]
        self.assertFails("KAFKA_SSL_CA_LOCATION (/var/run/secrets/latchkey/kafka-ca/ca.crt) must be ca.crt", no_ca_mount)

    def test_the_kafka_cluster_authenticates_and_authorizes(self):
        def plain_listener(docs):
            find(docs, "Kafka", "latchkey-kafka")["spec"]["kafka"]["listeners"].append(
                {"name": "plain", "port": 9092, "type": "internal", "tls": False})
        self.assertFails("listener plain must use TLS and scram-sha-512 authentication", plain_listener)
        self.assertFails(
            "authorization must be type simple",
            lambda docs: find(docs, "Kafka", "latchkey-kafka")["spec"]["kafka"].pop("authorization"))
        self.assertFails(
            "KafkaUsers need the User Operator",
            lambda docs: find(docs, "Kafka", "latchkey-kafka")["spec"]["entityOperator"].pop("userOperator"))

    def test_an_unused_kafka_user_fails(self):
        def spare(docs):
            user = copy.deepcopy(find(docs, "KafkaUser", "dpop-verifier"))
            user["metadata"]["name"] = "spare"
            docs.append(user)
        self.assertFails("KafkaUser spare is used by no Deployment", spare)

    def test_no_secret_value_inline(self):
        self.assertFails(
            "KEY_ENCRYPTION_KEY must come from a mounted Secret (KEY_ENCRYPTION_KEY_FILE) or a secretKeyRef",
            lambda docs: set_env(container(docs, "token-service"), "KEY_ENCRYPTION_KEY", "c2VjcmV0"))
        self.assertFails(
            "KAFKA_SASL_PASSWORD must come from a mounted Secret",
            lambda docs: set_env(container(docs, "audit-consumer"), "KAFKA_SASL_PASSWORD", "hunter2"))
        self.assertFails(
            "DATABASE_SYSTEM_URL holds a literal password",
            lambda docs: set_env(container(docs, "audit-consumer"), "DATABASE_SYSTEM_URL",
                                 "postgres://latchkey_system:hunter2@latchkey-db-rw:5432/latchkey?sslmode=verify-full"))
        self.assertFails(
            "SECRET_HASH_KEY_FILE (/etc/hash-key) is not a file of a mounted Secret",
            lambda docs: set_env(container(docs, "registration-gateway"), "SECRET_HASH_KEY_FILE", "/etc/hash-key"))

        def secret_in_config_map(docs):
            find(docs, "ConfigMap", next(d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"
                                         and d["metadata"]["name"].startswith("latchkey-kafka")))["data"][
                "KAFKA_SASL_PASSWORD"] = "hunter2"
        self.assertFails("KAFKA_SASL_PASSWORD must come from a mounted Secret", secret_in_config_map)

    def test_database_tls_is_verified(self):
        def no_tls(docs):
            for config_map in docs:
                if config_map["kind"] == "ConfigMap" and "DATABASE_TLS" in config_map.get("data", {}):
                    config_map["data"]["DATABASE_TLS"] = "sslmode=disable"
        self.assertFails("DATABASE_URL must set sslmode=verify-full", no_tls)
        self.assertFails(
            "latchkey-db-pooler-rw is not a name in latchkey-db's server certificate",
            lambda docs: find(docs, "Cluster", "latchkey-db")["spec"].pop("certificates"))

    def test_secret_files_readable_by_the_container_user(self):
        def no_fs_group(docs):
            find(docs, "Deployment", "token-service")["spec"]["template"]["spec"]["securityContext"].pop("fsGroup")
        self.assertFails("Secret volume secrets is not world-readable and the pod sets no fsGroup", no_fs_group)

    def test_declared_ports_are_the_ports_the_service_listens_on(self):
        def management_elsewhere(docs):
            for port in container(docs, "token-service")["ports"]:
                if port["name"] == "management":
                    port["containerPort"] = 9090
        self.assertFails("container port management is 9090, the service listens on 9082", management_elsewhere)
        self.assertFails(
            "container port http is 8082, the service listens on 8088",
            lambda docs: set_env(container(docs, "token-service"), "HTTP_PORT", "8088"))

        def explicit_management_port(docs):
            set_env(container(docs, "token-service"), "MANAGEMENT_PORT", "9090")
            management_elsewhere(docs)
        self.assertEqual([e for e in self.errors(explicit_management_port) if "port" in e], [])

    def test_request_traffic_through_the_pooler_and_sessions_on_the_primary(self):
        def swap(variable, old, new):
            def mutate(docs):
                target = container(docs, "token-service")
                value = next(v["value"] for v in target["env"] if v["name"] == variable)
                set_env(target, variable, value.replace(old, new))
            return mutate
        self.assertFails(
            "DATABASE_URL (request traffic) must go through the Pooler",
            swap("DATABASE_URL", "$(DATABASE_POOLER_HOST)", "$(DATABASE_HOST)"))
        self.assertFails(
            "DATABASE_SYSTEM_URL needs a session (advisory locks, SET): use the -rw service",
            swap("DATABASE_SYSTEM_URL", "$(DATABASE_HOST)", "$(DATABASE_POOLER_HOST)"))

    def test_pools_at_their_hpa_maximum_fit_max_connections(self):
        self.assertFails(
            "pools at HPA maximum need",
            lambda docs: find(docs, "HorizontalPodAutoscaler", "token-service")["spec"].update(maxReplicas=60))

    def test_the_pooler_tracks_prepared_statements(self):
        self.assertFails(
            "max_prepared_statements must be above 0",
            lambda docs: find(docs, "Pooler", "latchkey-db-pooler-rw")["spec"]["pgbouncer"]["parameters"].pop(
                "max_prepared_statements"))

    def test_the_sidecar_gets_no_database(self):
        self.assertFails(
            "the sidecar has no database; it must get no DATABASE_* variable",
            lambda docs: set_env(container(docs, "example-api", "dpop-verifier"), "DATABASE_URL", "postgres://x@y/z"))

    def test_kafka_version_and_backups(self):
        self.assertFails(
            "Kafka 3.9.0 is not supported by Strimzi",
            lambda docs: find(docs, "Kafka", "latchkey-kafka")["spec"]["kafka"].update(version="3.9.0"))
        self.assertFails(
            "backups go through the Barman Cloud plugin, not spec.backup",
            lambda docs: find(docs, "Cluster", "latchkey-db")["spec"].update(backup={"barmanObjectStore": {}}))

        def no_scheduled_backup(docs):
            docs[:] = [d for d in docs if d["kind"] != "ScheduledBackup"]
        self.assertFails("no ScheduledBackup with method plugin", no_scheduled_backup)

    def test_monitoring_scrapes_every_service_and_queries_exported_metrics(self):
        def unknown_metric(docs):
            rule = find(docs, "PrometheusRule", next(
                d["metadata"]["name"] for d in docs if d["kind"] == "PrometheusRule"))["spec"]["groups"][0]["rules"][0]
            rule["expr"] = "latchkey_no_such_metric_total > 0"
        self.assertFails("latchkey_no_such_metric_total is not a metric the services export", unknown_metric)

        def unscraped(docs):
            docs[:] = [d for d in docs if d["kind"] != "ServiceMonitor"]
        self.assertFails("no ServiceMonitor", unscraped)
        self.assertFails("management port not scraped by a ServiceMonitor", unscraped)

        def no_dashboard(docs):
            docs[:] = [d for d in docs if not (d["kind"] == "ConfigMap"
                                               and d["metadata"].get("labels", {}).get("grafana_dashboard"))]
        self.assertFails("no Grafana dashboard ConfigMap", no_dashboard)


if __name__ == "__main__":
    unittest.main()
