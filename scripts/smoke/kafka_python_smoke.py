"""A kafka-python session (a pure-Python protocol and codec implementation) against a broker.

Usage: kafka_python_smoke.py HOST:PORT
"""

import sys
import time
import uuid

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import InvalidTopicError, TopicAlreadyExistsError


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def transactions(bootstrap):
    """A transactional producer: aborted records reach read_uncommitted consumers only."""
    topic = "py-txn-" + uuid.uuid4().hex[:8]
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="py-smoke-" + uuid.uuid4().hex[:8])
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(5):
        producer.send(topic, value=f"aborted-{i}".encode(), partition=0)
    producer.flush()  # written, then aborted (unsent records would simply be dropped)
    producer.abort_transaction()
    producer.begin_transaction()
    for i in range(3):
        producer.send(topic, value=f"committed-{i}".encode(), partition=0)
    producer.commit_transaction()
    producer.close()

    def read(isolation):
        consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, isolation_level=isolation,
                                 auto_offset_reset="earliest", consumer_timeout_ms=3000)
        values = [r.value.decode() for r in consumer]
        consumer.close()
        return values

    committed = read("read_committed")
    check(committed == [f"committed-{i}" for i in range(3)], f"read_committed saw {committed}")
    everything = read("read_uncommitted")
    check(len(everything) == 8, f"read_uncommitted saw {everything}")


def main(bootstrap):
    topic = "py-smoke-" + uuid.uuid4().hex[:8]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1,
                                  topic_configs={"retention.ms": "3600000"})])
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
        raise AssertionError("creating an existing topic must fail")
    except TopicAlreadyExistsError:
        pass
    try:
        admin.create_topics([NewTopic("bad name!", num_partitions=1, replication_factor=1)])
        raise AssertionError("an invalid name must fail")
    except InvalidTopicError:
        pass

    configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    described = configs["topic"][topic]
    check(described["retention.ms"]["value"] == "3600000", f"retention.ms: {described['retention.ms']}")
    check(described["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG", "override source")
    check(described["segment.bytes"]["value"] == "1073741824", "defaults are described too")
    check(described["segment.bytes"]["config_source"] == "DEFAULT_CONFIG", "default source")

    # Recent timestamps: the topic keeps an hour (retention.ms) and the broker enforces it.
    base_ms = int(time.time() * 1000) - 60_000
    for codec in (None, "gzip"):
        # kafka-python 3 is idempotent by default (InitProducerId, sequence numbers).
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec, linger_ms=5)
        futures = [
            producer.send(topic, key=f"key-{i % 7}".encode(), value=f"{codec}-{i}".encode(),
                          headers=[("n", str(i).encode())], partition=i % 2, timestamp_ms=base_ms + i)
            for i in range(1000)
        ]
        producer.flush()
        metadata = [f.get(timeout=10) for f in futures]
        check(all(m.offset >= 0 for m in metadata), "offsets assigned")
        producer.close()

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             consumer_timeout_ms=5000, auto_offset_reset="earliest")
    partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    consumer.assign(partitions)
    end = consumer.end_offsets(partitions)
    check(end[partitions[0]] == 1000 and end[partitions[1]] == 1000, f"end offsets {end}")
    beginning = consumer.beginning_offsets(partitions)
    check(all(v == 0 for v in beginning.values()), f"beginning offsets {beginning}")
    consumer.seek_to_beginning()
    seen = []
    deadline = time.time() + 30
    while len(seen) < 2000 and time.time() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            seen.extend(records)
    check(len(seen) == 2000, f"consumed {len(seen)} of 2000")
    first = [r for r in seen if r.partition == 0][0]
    check(first.value == b"None-0" and first.key == b"key-0" and first.headers == [("n", b"0")],
          f"first record {first}")
    check(first.timestamp == base_ms, f"timestamp {first.timestamp}")

    # Offsets by time: record i has timestamp base+i; partition 1 holds odd i.
    found = consumer.offsets_for_times({partitions[1]: base_ms + 101})
    check(found[partitions[1]].offset == 50, f"offset for time: {found}")

    # Mid-batch seek inside the gzip batches.
    consumer.seek(partitions[0], 777)
    record = None
    while record is None:
        batch = consumer.poll(timeout_ms=1000).get(partitions[0], [])
        record = batch[0] if batch else None
    check(record.offset == 777, f"seek landed on {record.offset}")
    consumer.close()

    # A group consumer: reads everything, commits; a second member of the group finds nothing new.
    group = "py-group-" + uuid.uuid4().hex[:8]
    member = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                           enable_auto_commit=False, consumer_timeout_ms=15000)
    in_group = []
    for record in member:
        in_group.append(record)
        if len(in_group) == 2000:
            break
    check(len(in_group) == 2000, f"group member consumed {len(in_group)}")
    member.commit()
    member.close()
    again = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False, consumer_timeout_ms=3000)
    leftover = list(again)
    check(not leftover, f"re-read {len(leftover)} records after the commit")
    again.close()

    transactions(bootstrap)

    admin.create_partitions({topic: NewPartitions(total_count=3)})
    check(len(KafkaConsumer(bootstrap_servers=bootstrap).partitions_for_topic(topic)) == 3, "3 partitions")
    deleted = admin.delete_records({partitions[0]: 500})
    check(deleted[partitions[0]]["low_watermark"] == 500, f"delete_records: {deleted}")
    probe = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    start = probe.beginning_offsets([partitions[0]])[partitions[0]]
    check(start == 500, f"delete_records moved the start to {start}")
    probe.close()
    admin.delete_topics([topic])
    admin.close()
    print("kafka-python smoke: ok")


if __name__ == "__main__":
    main(sys.argv[1])
