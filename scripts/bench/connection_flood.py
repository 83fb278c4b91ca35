#!/usr/bin/env python3
"""Opens connections to a Kafka broker and holds them, or floods it with large frames.

  connection_flood.py idle HOST:PORT COUNT SECONDS
      COUNT connections, each answered once (ApiVersions), then held open SECONDS.
  connection_flood.py flood HOST:PORT CONNECTIONS FRAME_BYTES
      CONNECTIONS connections each send one FRAME_BYTES request at once (ApiVersions v0 followed
      by padding the broker reads and ignores) and wait for its answer.

Prints one line: what was done and how long it took. Exits nonzero when a connection was not
answered.
"""
import socket
import struct
import sys
import threading
import time


def api_versions(padding: int) -> bytes:
    client_id = b"weir-flood"
    body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    return struct.pack(">i", len(body) + padding) + body


def read_answer(sock: socket.socket) -> None:
    header = b""
    while len(header) < 4:
        chunk = sock.recv(4 - len(header))
        if not chunk:
            raise ConnectionError("closed before answering")
        header += chunk
    (size,) = struct.unpack(">i", header)
    while size > 0:
        chunk = sock.recv(min(size, 1 << 16))
        if not chunk:
            raise ConnectionError("closed mid-answer")
        size -= len(chunk)


def idle(address, count: int, seconds: float) -> None:
    held = []
    started = time.time()
    for _ in range(count):
        sock = socket.create_connection(address)
        sock.sendall(api_versions(0))
        read_answer(sock)
        held.append(sock)
    print(f"{count} connections open and answered in {time.time() - started:.1f} s", flush=True)
    time.sleep(seconds)
    for sock in held:
        sock.close()


def flood(address, connections: int, frame_bytes: int) -> None:
    frame = api_versions(0)
    padding = bytes(frame_bytes - (len(frame) - 4))
    request = api_versions(len(padding)) + padding
    failures = []

    def one() -> None:
        try:
            with socket.create_connection(address) as sock:
                sock.sendall(request)
                read_answer(sock)
        except OSError as error:
            failures.append(error)

    started = time.time()
    threads = [threading.Thread(target=one) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.time() - started
    mib = connections * len(request) / (1 << 20)
    print(f"{connections} x {frame_bytes >> 20} MiB requests: {len(failures)} failed, "
          f"{elapsed:.1f} s ({mib / elapsed:.0f} MiB/s)", flush=True)
    if failures:
        print(f"first failure: {failures[0]}", file=sys.stderr)
        sys.exit(1)


def main() -> None:
    mode, target = sys.argv[1], sys.argv[2]
    host, port = target.rsplit(":", 1)
    address = (host, int(port))
    if mode == "idle":
        idle(address, int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "flood":
        flood(address, int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
