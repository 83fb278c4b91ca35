"""A confluent-kafka (Python binding of librdkafka 2.1x) session against a broker: admin, producer
with every codec, list offsets (including max timestamp), and an assigned consumer.

Usage: confluent_kafka_smoke.py HOST:PORT
"""

import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaException, OFFSET_BEGINNING, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, ConfigResource, NewPartitions, NewTopic, OffsetSpec,
                                   ResourceType)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def main(bootstrap):
    topic = "ck-smoke-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                            config={"max.message.bytes": "100000"})])
    futures[topic].result(10)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
        raise AssertionError("creating an existing topic must fail")
    except KafkaException as e:
        check(e.args[0].name() == "TOPIC_ALREADY_EXISTS", f"duplicate topic: {e}")

    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(10)
    check(configs["max.message.bytes"].value == "100000", "max.message.bytes override")
    check(configs["retention.ms"].value is not None, "defaults described")

    base = int(time.time() * 1000) - 60_000
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    delivered = []
    for i, codec in enumerate(["none", "gzip", "snappy", "lz4", "zstd"]):
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": codec})
        for j in range(200):
            n = i * 200 + j
            p.produce(topic, value=f"{codec}-{j}".encode(), key=f"k{n % 3}".encode(), partition=0,
                      timestamp=base + n, headers=[("n", str(n).encode())],
                      on_delivery=lambda err, msg: delivered.append((err, msg.offset() if msg else None)))
        check(p.flush(10) == 0, f"flush {codec}")
    check(all(err is None for err, _ in delivered) and len(delivered) == 1000, "all delivered")
    try:
        producer.produce(topic, value=b"x" * 200_000, partition=0)
        producer.flush(10)
    except KafkaException:
        pass

    tp = TopicPartition(topic, 0)
    offsets = admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(10)
    check(offsets.offset == 1000, f"latest {offsets.offset}")
    offsets = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(10)
    check(offsets.offset == 999 and offsets.timestamp == base + 999, f"max timestamp {offsets.offset}")
    offsets = admin.list_offsets({tp: OffsetSpec.for_timestamp(base + 456)})[tp].result(10)
    check(offsets.offset == 456, f"for timestamp {offsets.offset}")

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen = []
    deadline = time.time() + 30
    while len(seen) < 1000 and time.time() < deadline:
        for message in consumer.consume(500, 1.0):
            check(message.error() is None, f"consume error {message.error()}")
            seen.append(message)
    check(len(seen) == 1000, f"consumed {len(seen)}")
    check(seen[250].value() == b"gzip-50", "gzip value")
    check(seen[999].headers() == [("n", b"999")], f"headers {seen[999].headers()}")
    check(seen[999].timestamp()[1] == base + 999, "timestamp")
    consumer.close()

    admin.create_partitions([NewPartitions(topic, 2)])[topic].result(10)
    admin.delete_topics([topic])[topic].result(10)
    print("confluent-kafka smoke: ok")


if __name__ == "__main__":
    main(sys.argv[1])
