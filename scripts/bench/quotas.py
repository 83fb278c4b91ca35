#!/usr/bin/env python3
"""Client quotas: a throttled producer beside an unthrottled one.

  quotas.py HOST:PORT QUOTA_BYTES_PER_SECOND SECONDS

Sets producer_byte_rate=QUOTA for client id `throttled` (AlterClientQuotas v0, a raw request:
the same bytes for Weir and Kafka), runs a kafka-python producer with client id `free` alone for
SECONDS, then `throttled` and `free` at once (a process each) for SECONDS, each sending 1 KiB records to its own
topic as fast as it can (acks=1). Prints bytes acknowledged per second: free alone, then each of
the pair.
"""
import socket
import struct
import sys
import multiprocessing
import time


def string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def set_quota(address, client_id: str, key: str, value: float) -> None:
    # AlterClientQuotas v0: entries [entity [type, name], ops [key, value, remove]], validate_only.
    entity = struct.pack(">i", 1) + string("client-id") + string(client_id)
    ops = struct.pack(">i", 1) + string(key) + struct.pack(">d?", value, False)
    body = struct.pack(">i", 1) + entity + ops + struct.pack(">?", False)
    header = struct.pack(">hhi", 49, 0, 1) + string("weir-bench")
    frame = header + body
    with socket.create_connection(address) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", sock.recv(4))[0]
        answer = b""
        while len(answer) < size:
            answer += sock.recv(size - len(answer))
    # correlation id, throttle, entries count, first entry's error code
    error = struct.unpack(">h", answer[12:14])[0]
    if error != 0:
        sys.exit(f"AlterClientQuotas answered error {error}")


def produce(bootstrap: str, client_id: str, seconds: float, results) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, acks=1, linger_ms=5)
    value = b"x" * 1024
    acknowledged = [0]

    def done(_):
        acknowledged[0] += len(value)

    started = time.time()
    while time.time() - started < seconds:
        producer.send(f"quota-{client_id}", value).add_callback(done)
    producer.flush()
    rate = acknowledged[0] / (time.time() - started)
    producer.close()
    if isinstance(results, dict):
        results[client_id] = rate
    else:
        results.put((client_id, rate))


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    host, port = sys.argv[1].rsplit(":", 1)
    quota, seconds = float(sys.argv[2]), float(sys.argv[3])
    set_quota((host, int(port)), "throttled", "producer_byte_rate", quota)
    alone = {}
    produce(sys.argv[1], "free", seconds, alone)
    print(f"free alone: {alone['free'] / 1e6:.2f} MB/s", flush=True)
    # One process each: the producers share no interpreter (kafka-python is CPU-bound).
    queue = multiprocessing.Queue()
    processes = [
        multiprocessing.Process(target=produce, args=(sys.argv[1], name, seconds, queue))
        for name in ("throttled", "free")
    ]
    for process in processes:
        process.start()
    results = dict(queue.get() for _ in processes)
    for process in processes:
        process.join()
    for name in ("throttled", "free"):
        print(f"{name} beside the other: {results[name] / 1e6:.2f} MB/s")


if __name__ == "__main__":
    main()
