# syntax=docker/dockerfile:1
# One image for every Latchkey executable: registration-gateway, token-service, dpop-verifier,
# audit-consumer and the `latchkey` CLI (migrate, kafka-cluster). Pick the process with the
# container command, e.g. `docker run latchkey token-service` or `command: ["latchkey", "migrate"]`.
#
#   docker build -t latchkey:dev .
#
ARG SWIFT_VERSION=6.3
ARG DEBIAN_SUITE=bookworm

# ---------------------------------------------------------------------------------------------
# Build stage: the official Swift toolchain image plus librdkafka, built from a pinned release tarball
# (checksum verified). Debian's librdkafka 2.0.2 predates fixes Kafka 4 brokers need, so the image
# ships the release the real-broker CI job passes with; headers and library come from the same build.
FROM swift:${SWIFT_VERSION}-${DEBIAN_SUITE} AS build
ARG LIBRDKAFKA_VERSION=2.16.0
ARG LIBRDKAFKA_SHA256=e6b61de61d3282879a88e4ee3d9f634a8b05bf78a9198dfc25c4820c0c9ed231
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config curl ca-certificates python3 \
        libssl-dev libsasl2-dev zlib1g-dev libzstd-dev liblz4-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL -o /tmp/librdkafka.tar.gz \
        "https://github.com/confluentinc/librdkafka/archive/refs/tags/v${LIBRDKAFKA_VERSION}.tar.gz" \
 && echo "${LIBRDKAFKA_SHA256}  /tmp/librdkafka.tar.gz" | sha256sum -c - \
 && mkdir /tmp/librdkafka && tar -xzf /tmp/librdkafka.tar.gz -C /tmp/librdkafka --strip-components=1 \
 && cd /tmp/librdkafka \
 && ./configure --prefix=/usr/local \
 && make -j"$(nproc)" libs && make install-subdirs \
 && ldconfig \
 && mkdir -p /staging/lib && cp -P /usr/local/lib/librdkafka.so* /staging/lib/ \
 && rm -rf /tmp/librdkafka /tmp/librdkafka.tar.gz
WORKDIR /src

# Resolve dependencies first: this layer is reused while only sources change.
# Package.resolved pins every dependency to the versions CI tested.
COPY Package.swift Package.resolved ./
RUN swift package resolve

COPY Sources ./Sources
COPY Services ./Services
COPY Examples ./Examples
COPY Tests ./Tests
# The Swift runtime is linked statically; librdkafka stays dynamic and is copied from this stage
# into the runtime stage. Event schemas, SQL migrations and each service's OpenAPI document are SwiftPM
# resources (one Latchkey_<target>.resources bundle per target that has any), looked up beside the
# executable, so they travel with it.
ARG PRODUCTS="registration-gateway token-service dpop-verifier audit-consumer latchkey"
RUN for product in $PRODUCTS; do \
        swift build -c release --static-swift-stdlib --product "$product" || exit 1; \
    done \
 && bin="$(swift build -c release --static-swift-stdlib --show-bin-path)" \
 && mkdir -p /staging/bin \
 && for product in $PRODUCTS; do install -m 0755 "$bin/$product" /staging/bin/; done \
 && cp -R "$bin"/Latchkey_*.resources /staging/bin/

# ---------------------------------------------------------------------------------------------
# Runtime stage: Debian slim with the pinned librdkafka and its libraries, CA certificates and curl
# (for compose healthchecks).
FROM debian:${DEBIAN_SUITE}-slim AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libssl3 libsasl2-2 libsasl2-modules zlib1g libzstd1 liblz4-1 libcurl4 ca-certificates curl tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 latchkey \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin latchkey

COPY --from=build /staging/lib/ /usr/local/lib/
RUN ldconfig
COPY --from=build /staging/bin/ /usr/local/bin/

# Containers listen on every interface; each service keeps its own default port (8081–8084).
ENV HTTP_HOST=0.0.0.0 \
    LOG_LEVEL=info
USER 10001:10001
EXPOSE 8081 8082 8083 8084
# Exec form only (no shell in between, so SIGTERM reaches the service and it drains gracefully).
# The command names the executable; the default shows the CLI's help.
CMD ["latchkey", "--help"]
