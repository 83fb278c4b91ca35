"""kafka-python against a three-broker Weir cluster whose leader is killed: an idempotent
producer with acks=all keeps writing while the harness (cluster_failover.sh) kills -9 the
broker leading partition 0 and restarts it; then a consumer group reads everything.

Every acknowledged record must be read exactly once, and the client must fail over on its own
(NOT_LEADER_OR_FOLLOWER → new metadata → the new leader).

Usage: cluster_failover.py produce BOOTSTRAP TOPIC COUNT ACKED_FILE
       cluster_failover.py verify BOOTSTRAP TOPIC ACKED_FILE
"""

import sys
import time

from kafka import KafkaConsumer, KafkaProducer


def produce(bootstrap, topic, count, acked_file):
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        retries=2**31 - 1,
        delivery_timeout_ms=120_000,
        request_timeout_ms=10_000,
        linger_ms=5,
    )
    acked, failed = [], []
    futures = []
    for i in range(count):
        value = f"py-{i}".encode()
        future = producer.send(topic, value=value, partition=i % 3)
        future.add_callback(lambda _meta, v=value: acked.append(v.decode()))
        future.add_errback(lambda error, v=value: failed.append((v.decode(), repr(error))))
        futures.append(future)
        if i % 100 == 0:
            time.sleep(0.05)  # spread the writes (about 3 s) over the kill
    producer.flush(timeout=120)
    producer.close()
    with open(acked_file, "w") as out:
        out.write("\n".join(acked))
    print(f"{len(acked)} acknowledged, {len(failed)} failed", file=sys.stderr)
    if failed:
        print(f"first failures: {failed[:3]}", file=sys.stderr)
    # With unbounded retries and a 120 s delivery timeout, a 5 s outage fails no write: a
    # healthy run has every record acknowledged (measured: 6000 of 6000).
    if failed or len(acked) != count:
        print(f"only {len(acked)} of {count} acknowledged", file=sys.stderr)
        return 1
    return 0


def verify(bootstrap, topic, acked_file):
    with open(acked_file) as handle:
        acked = [line for line in handle.read().split("\n") if line]
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id="py-failover",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    seen = {}
    for record in consumer:
        value = record.value.decode()
        seen[value] = seen.get(value, 0) + 1
    consumer.commit()
    consumer.close()
    lost = [value for value in acked if value not in seen]
    duplicated = [value for value, times in seen.items() if times > 1]
    print(f"{len(acked)} acknowledged, {len(seen)} read, {len(lost)} lost, "
          f"{len(duplicated)} duplicated", file=sys.stderr)
    if lost or duplicated:
        print(f"lost e.g. {lost[:5]}, duplicated e.g. {duplicated[:5]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "produce":
        sys.exit(produce(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]))
    sys.exit(verify(sys.argv[2], sys.argv[3], sys.argv[4]))
