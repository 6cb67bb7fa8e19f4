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
# Build stage: the official Swift toolchain image plus librdkafka's headers.
FROM swift:${SWIFT_VERSION}-${DEBIAN_SUITE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends librdkafka-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src

# Resolve dependencies first: this layer is reused while only sources change.
COPY Package.swift ./
RUN swift package resolve

COPY Shared ./Shared
COPY Services ./Services
COPY Tests ./Tests
# The Swift runtime is linked statically; librdkafka (a system library) stays dynamic and comes
# from Debian's librdkafka1 in the runtime stage. Event schemas and SQL migrations are SwiftPM
# resources (Latchkey_Shared.resources), looked up beside the executable, so they travel with it.
ARG PRODUCTS="registration-gateway token-service dpop-verifier audit-consumer latchkey"
RUN for product in $PRODUCTS; do \
        swift build -c release --static-swift-stdlib --product "$product" || exit 1; \
    done \
 && bin="$(swift build -c release --static-swift-stdlib --show-bin-path)" \
 && mkdir -p /staging/bin \
 && for product in $PRODUCTS; do install -m 0755 "$bin/$product" /staging/bin/; done \
 && cp -R "$bin/Latchkey_Shared.resources" /staging/bin/

# ---------------------------------------------------------------------------------------------
# Runtime stage: Debian slim with librdkafka, CA certificates and curl (for compose healthchecks).
FROM debian:${DEBIAN_SUITE}-slim AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        librdkafka1 ca-certificates curl tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 latchkey \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin latchkey

COPY --from=build /staging/bin/ /usr/local/bin/

# Containers listen on every interface; each service keeps its own default port (8081–8084).
ENV HTTP_HOST=0.0.0.0 \
    LOG_LEVEL=info
USER 10001:10001
EXPOSE 8081 8082 8083 8084
# Exec form only (no shell in between, so SIGTERM reaches the service and it drains gracefully).
# The command names the executable; the default shows the CLI's help.
CMD ["latchkey", "--help"]
