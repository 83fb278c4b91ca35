"""Kafka 4.4 conformance with confluent-kafka (librdkafka 2.16): what a new user's client runs
into, checked the same way against Weir and against the reference Kafka (compat/run.sh runs it
against both; every check must pass on both).

Usage: conformance.py HOST:PORT [SECTION...]   (sections: fencing, describe_groups, topic_compression,
broker_configs, scram_users; default all)
"""

import logging
import sys
import time
import uuid

from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewTopic, ResourceType, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

TIMEOUT_S = 30
# librdkafka's own log lines (fencing makes it print fatal errors, as it should): not shown; a
# failing check says what it saw.
QUIET = logging.getLogger("librdkafka")
QUIET.setLevel(logging.CRITICAL + 1)
QUIET.propagate = False


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(admin, topic, partitions=2, replication_factor=1, config=None):
    new = NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor,
                   config=config or {})
    admin.create_topics([new])[topic].result(TIMEOUT_S)
    # Metadata reaches every broker of a cluster shortly after CreateTopics answers.
    deadline = time.time() + TIMEOUT_S
    while time.time() < deadline:
        topics = admin.list_topics(topic, timeout=TIMEOUT_S).topics
        if topic in topics and topics[topic].error is None and len(topics[topic].partitions) == partitions:
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} not ready")


def transactional_producer(bootstrap, transactional_id):
    producer = Producer({"bootstrap.servers": bootstrap, "logger": QUIET, "transactional.id": transactional_id,
                         "linger.ms": 0, "message.timeout.ms": 20_000})
    producer.init_transactions(TIMEOUT_S)
    return producer


def outcome(call):
    """What a client call raised: (error name, fatal) — (None, False) when it succeeded."""
    try:
        call()
        return (None, False)
    except KafkaException as e:
        error = e.args[0]
        return (error.name(), error.fatal())


def produce_outcome(producer, topic, partition):
    """A produce and what became of it: the producer's fatal error if it went into one at once,
    else the error its delivery report (or produce()) gave: (error name, fatal)."""
    reports = []
    try:
        producer.produce(topic, value=b"zombie", partition=partition,
                         on_delivery=lambda err, msg: reports.append(err))
    except KafkaException as e:
        return (e.args[0].name(), e.args[0].fatal())
    try:
        producer.flush(TIMEOUT_S)
    except (KafkaException, SystemError) as e:
        # A fatal error is raised from flush() (wrapped in SystemError when it surfaces while
        # the delivery callback runs); the report was recorded first.
        cause = e if isinstance(e, KafkaException) else e.__cause__
        if not reports and isinstance(cause, KafkaException):
            return (cause.args[0].name(), cause.args[0].fatal())
    check(len(reports) == 1, f"one delivery report, got {reports}")
    error = reports[0]
    if error is None:
        return (None, False)
    # The delivery report carries the partition's error; the state it left the producer in is
    # what begin_transaction() says, which asks no broker: a fatal error, the error that made
    # the transaction abortable, or "already in a transaction".
    state = local_state(producer)
    return state if state[1] else (error.name(), False)


def local_state(producer):
    """The producer's transactional error state, without a request: (error name, fatal)."""
    try:
        producer.begin_transaction()
        return (None, False)
    except KafkaException as e:
        return (e.args[0].name(), e.args[0].fatal())


def fenced_zombie(bootstrap, topic, before_fence):
    """A producer in a transaction (`before_fence` run on it), then fenced by a newer instance
    with the same transactional.id. Returns (zombie, newer)."""
    transactional_id = unique("conformance-fence")
    zombie = transactional_producer(bootstrap, transactional_id)
    zombie.begin_transaction()
    before_fence(zombie)
    newer = transactional_producer(bootstrap, transactional_id)
    return zombie, newer


def produce_and_flush(topic, partition):
    def run(producer):
        reports = []
        producer.produce(topic, value=b"before-fence", partition=partition,
                         on_delivery=lambda err, msg: reports.append(err))
        producer.flush(TIMEOUT_S)
        check(reports == [None], f"produce before the fence: {reports}")
    return run


def fencing(bootstrap, admin):
    """Every path a fenced ("zombie") transactional producer can take must fail fatally with
    PRODUCER_FENCED (librdkafka's _FENCED), at once."""
    topic = unique("conformance-fencing")
    create_topic(admin, topic, partitions=2)
    group = unique("conformance-fencing-group")
    fenced = ("_FENCED", True)
    paths = {
        # Produce to a partition already in the (now aborted) transaction.
        "produce_same_partition": lambda z: produce_outcome(z, topic, 0),
        # Produce to a partition not yet in it (AddPartitionsToTxn, or Produce v12 adding it).
        "produce_new_partition": lambda z: produce_outcome(z, topic, 1),
        "send_offsets": lambda z: outcome(lambda: z.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 1)], consumer_group_metadata(bootstrap, group), TIMEOUT_S)),
        "commit": lambda z: outcome(lambda: z.commit_transaction(TIMEOUT_S)),
        "abort": lambda z: outcome(lambda: z.abort_transaction(TIMEOUT_S)),
    }
    results = {}
    for name, path in paths.items():
        zombie, newer = fenced_zombie(bootstrap, topic, produce_and_flush(topic, 0))
        results[name] = path(zombie)
        newer.begin_transaction()
        newer.produce(topic, value=b"newer", partition=0)
        newer.commit_transaction(TIMEOUT_S)
    print(f"fencing: {results}")
    for name, result in results.items():
        check(result == fenced, f"fencing/{name}: {result}, expected {fenced}")
    admin.delete_topics([topic])[topic].result(TIMEOUT_S)
    print(f"fencing: {len(results)} paths fatal _FENCED")


def consumer_group_metadata(bootstrap, group):
    consumer = Consumer({"bootstrap.servers": bootstrap, "logger": QUIET, "group.id": group})
    metadata = consumer.consumer_group_metadata()
    consumer.close()
    return metadata


def describe_groups(bootstrap, admin):
    """describe_consumer_groups of a group with a static member (KIP-345) shows every field of
    the member: its group.instance.id, client id, host and assignment."""
    topic = unique("conformance-static")
    create_topic(admin, topic, partitions=2)
    group = unique("conformance-static-group")
    consumer = Consumer({"bootstrap.servers": bootstrap, "logger": QUIET, "group.id": group,
                         "group.instance.id": "instance-1", "client.id": "static-client",
                         "session.timeout.ms": 10_000, "enable.auto.commit": False})
    consumer.subscribe([topic])
    deadline = time.time() + TIMEOUT_S
    while not consumer.assignment() and time.time() < deadline:
        consumer.poll(0.2)
    check(len(consumer.assignment()) == 2, f"assigned {consumer.assignment()}")
    described = admin.describe_consumer_groups([group], include_authorized_operations=True)
    description = described[group].result(TIMEOUT_S)
    check(description.state == ConsumerGroupState.STABLE, f"state {description.state}")
    check(description.partition_assignor == "range", f"assignor {description.partition_assignor}")
    check(len(description.members) == 1, f"members {description.members}")
    member = description.members[0]
    check(member.group_instance_id == "instance-1", f"group_instance_id {member.group_instance_id!r}")
    check(member.client_id == "static-client", f"client_id {member.client_id!r}")
    check(member.host.lstrip("/") == "127.0.0.1", f"host {member.host!r}")
    check(member.member_id != "", "a member id")
    assigned = sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions)
    check(assigned == [(topic, 0), (topic, 1)], f"assignment {assigned}")
    operations = sorted(op.name for op in description.authorized_operations or [])
    # Without an authorizer, every operation a group supports (Kafka 4: also its configs).
    expected = ["ALTER_CONFIGS", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS", "READ"]
    check(operations == expected, f"authorized operations {operations}")
    consumer.close()
    admin.delete_topics([topic])[topic].result(TIMEOUT_S)
    print(f"describe_groups: static member {member.group_instance_id} described in full")


def topic_compression(bootstrap, admin):
    """A topic's compression.type (with its KIP-390 level) set at creation and altered later:
    accepted, described as set, and every record read back exactly, from plain and idempotent
    producers whose codecs differ from the topic's."""
    topic = unique("conformance-compression")
    create_topic(admin, topic, partitions=1,
                 config={"compression.type": "zstd", "compression.zstd.level": "7"})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    described = {name: configs[name].value for name in
                 ("compression.type", "compression.zstd.level", "compression.gzip.level")}
    check(described == {"compression.type": "zstd", "compression.zstd.level": "7",
                        "compression.gzip.level": "-1"}, f"described {described}")
    sent = []

    def produce(codec, idempotent, count):
        producer = Producer({"bootstrap.servers": bootstrap, "logger": QUIET, "compression.type": codec,
                             "enable.idempotence": idempotent, "linger.ms": 5})
        for _ in range(count):
            value = f"{codec}-{len(sent)}-" + "x" * 50
            sent.append(value)
            producer.produce(topic, value=value.encode(), key=str(len(sent) % 7).encode(),
                             partition=0)
        check(producer.flush(TIMEOUT_S) == 0, f"{codec} records delivered")

    produce("none", False, 300)
    produce("lz4", True, 300)
    alter = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("compression.type", "gzip", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("compression.gzip.level", "9", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([alter])[alter].result(TIMEOUT_S)
    bad = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("compression.gzip.level", "10", incremental_operation=AlterConfigOpType.SET)])
    try:
        admin.incremental_alter_configs([bad])[bad].result(TIMEOUT_S)
        raise AssertionError("compression.gzip.level=10 must be refused")
    except KafkaException as e:
        check(e.args[0].name() == "INVALID_CONFIG", f"bad level: {e}")
    produce("zstd", True, 300)
    produce("snappy", False, 300)
    consumer = Consumer({"bootstrap.servers": bootstrap, "logger": QUIET, "group.id": unique("compression-reader"),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    read = []
    deadline = time.time() + TIMEOUT_S
    while len(read) < len(sent) and time.time() < deadline:
        for message in consumer.consume(500, 1.0):
            check(message.error() is None, f"consume error {message.error()}")
            read.append((message.offset(), message.value().decode()))
    consumer.close()
    check([offset for offset, _ in read] == list(range(len(sent))), "offsets 0.. without gaps")
    check([value for _, value in read] == sent, "every record once, in order")
    admin.delete_topics([topic])[topic].result(TIMEOUT_S)
    print(f"topic_compression: {len(sent)} records through zstd and gzip topics read back exactly")


def broker_configs(bootstrap, admin):
    """A dynamic config of broker 1 (the node both brokers under test run as) set with
    incremental_alter_configs: described with its source, taken at once by a topic without an
    override (a record over the static message.max.bytes is accepted, and read back), a static
    property refused; deleted at the end."""
    topic = unique("conformance-broker-configs")
    create_topic(admin, topic, partitions=1)
    node = ConfigResource(ResourceType.BROKER, "1")

    def alter(name, value, operation):
        change = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry(name, value, incremental_operation=operation)])
        admin.incremental_alter_configs([change])[change].result(TIMEOUT_S)

    def described(name, value):
        """The entry once it shows `value` from the broker's dynamic config. Kafka's describe can
        show the dynamic source a moment before the value: its broker's config map is updated
        before the reconfigured config is built (measured on a fresh Kafka 4.4)."""
        deadline = time.time() + TIMEOUT_S
        while True:
            entry = admin.describe_configs([node])[node].result(TIMEOUT_S)[name]
            if (entry.value, entry.source) == (value, ConfigSource.DYNAMIC_BROKER_CONFIG.value) \
                    or time.time() > deadline:
                return entry
            time.sleep(0.1)

    alter("message.max.bytes", "2000000", AlterConfigOpType.SET)
    entry = described("message.max.bytes", "2000000")
    check((entry.value, entry.source, entry.is_read_only)
          == ("2000000", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False), 
          f"described {entry} source {entry.source}")
    try:
        alter("socket.request.max.bytes", "1048576", AlterConfigOpType.SET)
        raise AssertionError("a static broker config must be refused")
    except KafkaException as e:
        check(e.args[0].name() == "INVALID_REQUEST", f"static config: {e}")
    value = "x" * 1_500_000
    producer = Producer({"bootstrap.servers": bootstrap, "logger": QUIET, "message.max.bytes": 5_000_000})
    producer.produce(topic, value=value.encode(), key=b"large", partition=0)
    check(producer.flush(TIMEOUT_S) == 0, "the large record delivered")
    consumer = Consumer({"bootstrap.servers": bootstrap, "logger": QUIET, "group.id": unique("broker-configs"),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "fetch.max.bytes": 10_000_000})
    consumer.assign([TopicPartition(topic, 0, 0)])
    read = None
    deadline = time.time() + TIMEOUT_S
    while read is None and time.time() < deadline:
        message = consumer.poll(1.0)
        if message is not None:
            check(message.error() is None, f"consume error {message.error()}")
            read = (message.offset(), message.key(), message.value())
    consumer.close()
    check(read == (0, b"large", value.encode()), "the large record read back exactly")
    alter("message.max.bytes", None, AlterConfigOpType.DELETE)
    admin.delete_topics([topic])[topic].result(TIMEOUT_S)
    print("broker_configs: a dynamic message.max.bytes of broker 1 described, applied and deleted")


def scram_users(bootstrap, admin):
    """SCRAM users through KIP-554's admin calls: upserts (one user with both mechanisms), the
    refusals (too few and too many iterations, deleting what does not exist), describing named
    users (an unknown one RESOURCE_NOT_FOUND) and all of them, and deletion."""
    user, other = unique("scram-user"), unique("scram-other")

    def altered(changes):
        outcome = {}
        for name, future in admin.alter_user_scram_credentials(changes).items():
            try:
                future.result(TIMEOUT_S)
                outcome[name] = "ok"
            except KafkaException as e:
                outcome[name] = e.args[0].name()
        return outcome

    def info(mechanism, iterations):
        return ScramCredentialInfo(mechanism, iterations)

    sha256, sha512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
    outcome = altered([
        UserScramCredentialUpsertion(user, info(sha256, 8192), b"pw-one", b"salt-one"),
        UserScramCredentialUpsertion(other, info(sha512, 4096), b"pw-two"),
    ])
    check(outcome == {user: "ok", other: "ok"}, f"upserts: {outcome}")
    outcome = altered([UserScramCredentialUpsertion(user, info(sha512, 4096), b"pw-three")])
    check(outcome == {user: "ok"}, f"a second mechanism: {outcome}")
    few, many, missing = unique("few"), unique("many"), unique("missing")
    outcome = altered([
        UserScramCredentialUpsertion(few, info(sha256, 1000), b"pw"),
        UserScramCredentialUpsertion(many, info(sha256, 20000), b"pw"),
        UserScramCredentialDeletion(missing, sha256),
    ])
    check(outcome == {few: "UNACCEPTABLE_CREDENTIAL", many: "UNACCEPTABLE_CREDENTIAL",
                      missing: "RESOURCE_NOT_FOUND"}, f"refusals: {outcome}")

    def described(users):
        answer = {}
        futures = admin.describe_user_scram_credentials(users)
        items = futures.items() if isinstance(futures, dict) else futures.result(TIMEOUT_S).items()
        for name, value in items:
            try:
                description = value.result(TIMEOUT_S) if hasattr(value, "result") else value
                answer[name] = sorted((i.mechanism.name, i.iterations) for i in description.scram_credential_infos)
            except KafkaException as e:
                answer[name] = e.args[0].name()
        return answer

    deadline = time.time() + TIMEOUT_S
    expected = {user: [("SCRAM_SHA_256", 8192), ("SCRAM_SHA_512", 4096)], other: [("SCRAM_SHA_512", 4096)]}
    while described([user, other]) != expected and time.time() < deadline:
        time.sleep(0.2)
    check(described([user, other]) == expected, f"described: {described([user, other])}")
    unknown = unique("unknown")
    check(described([unknown]) == {unknown: "RESOURCE_NOT_FOUND"}, f"unknown user: {described([unknown])}")
    everyone = described(None)
    check(everyone.get(user) == expected[user] and everyone.get(other) == expected[other],
          f"all users: {everyone}")
    outcome = altered([UserScramCredentialDeletion(user, sha256), UserScramCredentialDeletion(user, sha512),
                       UserScramCredentialDeletion(other, sha512)])
    check(outcome.get(other) == "ok", f"deletions: {outcome}")
    # One user twice in a request: refused whole (DUPLICATE_RESOURCE), as Kafka's controller does.
    check(outcome.get(user) == "DUPLICATE_RESOURCE", f"a user twice: {outcome}")
    outcome = altered([UserScramCredentialDeletion(user, sha256)])
    outcome.update(altered([UserScramCredentialDeletion(user, sha512)]))
    check(outcome == {user: "ok"}, f"deletions one by one: {outcome}")
    deadline = time.time() + TIMEOUT_S
    while described([user]) != {user: "RESOURCE_NOT_FOUND"} and time.time() < deadline:
        time.sleep(0.2)
    check(described([user]) == {user: "RESOURCE_NOT_FOUND"}, f"after deletion: {described([user])}")
    print("scram_users: SCRAM credentials upserted, refused, described and deleted")


SECTIONS = {"fencing": fencing, "describe_groups": describe_groups,
            "topic_compression": topic_compression, "broker_configs": broker_configs,
            "scram_users": scram_users}


def main(bootstrap, sections):
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET})
    for section in sections or SECTIONS:
        SECTIONS[section](bootstrap, admin)
    print("confluent-kafka conformance: ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
