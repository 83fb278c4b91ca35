#!/usr/bin/env bash
# Builds librdkafka's rdkafka_performance tool from the librdkafka copy shipped inside the
# rdkafka-sys crate (the same librdkafka the Rust tests use), with OpenSSL (the TLS benchmark),
# into ~/.cache/weir/rdkafka-perf-ssl. Prints the path of the binary.
set -euo pipefail
cache=${WEIR_CACHE:-$HOME/.cache/weir}
out=$cache/rdkafka-perf-ssl
if [ -x "$out/rdkafka_performance" ]; then echo "$out/rdkafka_performance"; exit 0; fi
registry=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/rdkafka-sys-*/librdkafka 2>/dev/null | sort | tail -1)
[ -n "$registry" ] || { echo "rdkafka-sys source not found: run cargo build first" >&2; exit 1; }
missing=()
dpkg -s libzstd-dev >/dev/null 2>&1 || missing+=(libzstd-dev)
dpkg -s zlib1g-dev >/dev/null 2>&1 || missing+=(zlib1g-dev)
dpkg -s libssl-dev >/dev/null 2>&1 || missing+=(libssl-dev)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
rm -rf "$out.src" && cp -r "$registry" "$out.src"
cd "$out.src"
./configure --enable-ssl --disable-sasl --disable-gssapi --disable-curl --enable-static >/dev/null
make -j"$(nproc)" -C src librdkafka.a >/dev/null
cc -O2 -Isrc examples/rdkafka_performance.c src/librdkafka.a -lssl -lcrypto -lzstd -lz -lpthread -lm -ldl -lrt -o rdkafka_performance
mkdir -p "$out" && mv rdkafka_performance "$out/"
cd / && rm -rf "$out.src"
echo "$out/rdkafka_performance"
