"""Debian's python3-kafka (kafka-python 2.0.2, an older client with older protocol versions:
JoinGroup v2, OffsetCommit v2, no KIP-394 member-id round trip) in a consumer group against a
broker: two members split the partitions, commit, and a later member resumes after the commit.

Usage: /usr/bin/python3 debian_kafka_python_smoke.py HOST:PORT
"""

import sys
import threading
import time
import uuid

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def consume_in_threads(members, wanted, timeout_s=40):
    """Each member polls on its own thread (a member blocks in poll() while its group
    rebalances, as with any broker) until they have `wanted` distinct records between them."""
    seen = {i: [] for i in range(len(members))}
    lock = threading.Lock()
    deadline = time.time() + timeout_s

    def total():
        with lock:
            return len({r.value for records in seen.values() for r in records})

    def run(index, member):
        while total() < wanted and time.time() < deadline:
            for records in member.poll(timeout_ms=200).values():
                with lock:
                    seen[index].extend(records)

    threads = [threading.Thread(target=run, args=(i, m)) for i, m in enumerate(members)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [seen[i] for i in range(len(members))]


def main(bootstrap):
    check(kafka.__version__ == "2.0.2", f"expected Debian's kafka-python 2.0.2, got {kafka.__version__}")
    topic = "debian-py-" + uuid.uuid4().hex[:8]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(400):
        producer.send(topic, key=str(i).encode(), value=f"v{i}".encode(), partition=i % 4)
    producer.flush()
    producer.close()

    group = "debian-group-" + uuid.uuid4().hex[:8]
    settings = dict(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                    enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=500)
    first = KafkaConsumer(topic, **settings)
    second = KafkaConsumer(topic, **settings)
    got_first, got_second = consume_in_threads([first, second], 400)
    values = sorted(r.value for r in got_first + got_second)
    check(len(set(values)) == 400, f"consumed {len(set(values))} distinct records of 400")
    # Both members ended up with two partitions each, none shared, and the records each got
    # came from its own partitions (a record read twice would be from before the rebalance).
    check(len(first.assignment()) == 2 and len(second.assignment()) == 2,
          f"assignments {first.assignment()} / {second.assignment()}")
    check(not (first.assignment() & second.assignment()), "no partition is shared")
    first.commit()
    second.commit()
    first.close()
    second.close()

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(topic, value=b"after-commit", partition=3).get(timeout=10)
    producer.close()
    late = KafkaConsumer(topic, consumer_timeout_ms=8000, **settings)
    resumed = [r.value for r in late]
    late.close()
    check(resumed == [b"after-commit"], f"resumed with {resumed}")
    admin.delete_topics([topic])
    admin.close()
    print("debian kafka-python 2.0.2 smoke: ok")


if __name__ == "__main__":
    main(sys.argv[1])
