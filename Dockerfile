# The weir image: the one binary (broker, pipelines, CLI), run as a non-root user.
# Build: docker build -t weir:0.1.0 .
FROM rust:1.95-bookworm AS build
# librdkafka is built with the system's OpenSSL (clients of TLS listeners and secured clusters).
RUN apt-get update && apt-get install -y --no-install-recommends cmake libssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --bin weir

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libssl3 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --create-home --home-dir /var/lib/weir weir
COPY --from=build /src/target/release/weir /usr/local/bin/weir
USER 10001
WORKDIR /var/lib/weir
EXPOSE 9092 9093 9644
ENTRYPOINT ["weir"]
CMD ["broker", "--listen=0.0.0.0:9092", "--metrics-listen=0.0.0.0:9644", "--data-dir=/var/lib/weir"]
