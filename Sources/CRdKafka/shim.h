#ifndef LATCHKEY_CRDKAFKA_SHIM_H
#define LATCHKEY_CRDKAFKA_SHIM_H

// One umbrella for the Swift importer: the client API and the mock-cluster API
// used by EmbeddedKafkaCluster (same shared library, separate header).
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#endif
