// A session of the Java client (kafka-clients) against a broker: admin, producer, assigned
// consumer, and a group consumer with the admin client's group calls.
// Usage: java -cp "<kafka libs>/*:<classes>" ClientSession HOST:PORT
// Exits non-zero with a message on the first thing that does not behave as Kafka's own broker does.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ClientSession {
    static void check(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }

    static <T extends Throwable> void expectCause(Future<?> future, Class<T> type) throws InterruptedException {
        try {
            future.get();
            throw new AssertionError("expected " + type.getSimpleName());
        } catch (ExecutionException e) {
            check(type.isInstance(e.getCause()), "expected " + type.getSimpleName() + ", got " + e.getCause());
        }
    }

    /** A subscribed consumer in a group commits; the admin client reads, resets and deletes the offsets. */
    static void groupSession(Properties common, String topic) throws Exception {
        String group = "java-group-" + UUID.randomUUID().toString().substring(0, 8);
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        Properties props = new Properties();
        props.putAll(common);
        props.put("group.id", group);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            int count = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (count < 1000 && System.currentTimeMillis() < deadline) {
                count += consumer.poll(Duration.ofMillis(500)).count();
            }
            check(count == 1000, "group consumer read " + count);
            check(consumer.assignment().equals(Set.of(p0, p1)), "assignment " + consumer.assignment());
            consumer.commitSync();
        }
        try (Admin admin = Admin.create(common)) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(committed.get(p0).offset() == 500 && committed.get(p1).offset() == 500, "committed " + committed);
            ConsumerGroupDescription description = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            check(description.groupState() == GroupState.EMPTY, "state after close " + description.groupState());
            check(description.members().isEmpty(), "members after close " + description.members());
            admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(100))).all().get();
        }
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> resumed = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (resumed.size() < 400 && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(500)).forEach(resumed::add);
            }
            check(resumed.size() == 400, "resumed with " + resumed.size() + " records");
            check(resumed.stream().allMatch(r -> r.partition() == 0 && r.offset() >= 100), "resumed from the reset offset");
        }
        try (Admin admin = Admin.create(common)) {
            admin.deleteConsumerGroups(List.of(group)).all().get();
            check(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().isEmpty(), "offsets deleted");
        }
    }

    static List<String> readValues(Properties common, String topic, String isolation, int expected) {
        Properties props = new Properties();
        props.putAll(common);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("isolation.level", isolation);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            TopicPartition p0 = new TopicPartition(topic, 0);
            consumer.assign(List.of(p0));
            consumer.seekToBeginning(List.of(p0));
            List<String> values = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 5_000;
            while (System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> values.add(r.value()));
                if (values.size() >= expected && consumer.position(p0) >= consumer.endOffsets(List.of(p0)).get(p0)) {
                    break;
                }
            }
            return values;
        }
    }

    /** A transactional producer: commit, abort, offsets in the transaction, fencing by a successor. */
    static void transactionalSession(Properties common) throws Exception {
        String topic = "java-txn-" + UUID.randomUUID().toString().substring(0, 8);
        String group = "java-txn-group-" + UUID.randomUUID().toString().substring(0, 8);
        String transactionalId = "java-txn-" + UUID.randomUUID();
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Properties props = new Properties();
        props.putAll(common);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        props.put("transactional.id", transactionalId);
        TopicPartition p0 = new TopicPartition(topic, 0);
        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        producer.initTransactions();
        producer.beginTransaction();
        for (int i = 0; i < 10; i++) {
            producer.send(new ProducerRecord<>(topic, 0, null, "committed-" + i));
        }
        producer.sendOffsetsToTransaction(Map.of(p0, new OffsetAndMetadata(42)), new ConsumerGroupMetadata(group));
        producer.commitTransaction();
        producer.beginTransaction();
        for (int i = 0; i < 5; i++) {
            producer.send(new ProducerRecord<>(topic, 0, null, "aborted-" + i));
        }
        producer.flush();
        producer.abortTransaction();
        List<String> committed = readValues(common, topic, "read_committed", 10);
        check(committed.size() == 10 && committed.stream().allMatch(v -> v.startsWith("committed")), "read_committed " + committed);
        List<String> everything = readValues(common, topic, "read_uncommitted", 15);
        check(everything.size() == 15, "read_uncommitted " + everything);
        try (Admin admin = Admin.create(common)) {
            Map<TopicPartition, OffsetAndMetadata> offsets =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(offsets.get(p0) != null && offsets.get(p0).offset() == 42, "offsets committed with the transaction " + offsets);
        }
        // A successor with the same transactional id fences this producer.
        producer.beginTransaction();
        producer.send(new ProducerRecord<>(topic, 0, null, "zombie"));
        try (KafkaProducer<String, String> successor = new KafkaProducer<>(props)) {
            successor.initTransactions();
            try {
                producer.commitTransaction();
                throw new AssertionError("the old producer must be fenced");
            } catch (ProducerFencedException | InvalidProducerEpochException expected) {
                // as Kafka
            }
        } finally {
            producer.close(Duration.ZERO);
        }
        List<String> after = readValues(common, topic, "read_committed", 10);
        check(after.stream().noneMatch(v -> v.equals("zombie")), "the fenced transaction is not visible " + after);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = "java-session-" + UUID.randomUUID().toString().substring(0, 8);
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);

        try (Admin admin = Admin.create(common)) {
            NewTopic newTopic = new NewTopic(topic, 2, (short) 1).configs(Map.of("retention.ms", "3600000"));
            admin.createTopics(List.of(newTopic)).all().get();
            expectCause(admin.createTopics(List.of(newTopic)).all(), TopicExistsException.class);
            expectCause(admin.createTopics(List.of(new NewTopic("bad name!", 1, (short) 1))).all(), InvalidTopicException.class);
            check(admin.listTopics().names().get().contains(topic), "listTopics");
            TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            check(description.partitions().size() == 2, "2 partitions: " + description);
            check(description.topicId() != null, "topic id");

            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            check("3600000".equals(config.get("retention.ms").value()), "retention.ms " + config.get("retention.ms"));
            check(config.get("retention.ms").source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "override source");
            check(config.get("segment.bytes").source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG, "default source");
            Collection<AlterConfigOp> ops = List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET));
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
            config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
            check("7200000".equals(config.get("retention.ms").value()), "altered retention.ms");
            check(admin.describeCluster().nodes().get().size() == 1, "one node");
        }

        long base = System.currentTimeMillis() - 60_000;
        Properties producerProps = new Properties();
        producerProps.putAll(common);
        producerProps.put("key.serializer", StringSerializer.class.getName());
        producerProps.put("value.serializer", StringSerializer.class.getName());
        producerProps.put("acks", "all");
        producerProps.put("compression.type", "lz4");
        producerProps.put("linger.ms", "5");
        // The Java producer is idempotent by default: InitProducerId, sequence numbers.
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                ProducerRecord<String, String> record = new ProducerRecord<>(topic, i % 2, base + i, "key-" + (i % 7), "value-" + i);
                record.headers().add("n", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                sent.add(producer.send(record));
            }
            producer.flush();
            for (int i = 0; i < sent.size(); i++) {
                RecordMetadata metadata = sent.get(i).get();
                check(metadata.offset() == i / 2, "offset of record " + i + ": " + metadata.offset());
            }
        }

        Properties consumerProps = new Properties();
        consumerProps.putAll(common);
        consumerProps.put("key.deserializer", StringDeserializer.class.getName());
        consumerProps.put("value.deserializer", StringDeserializer.class.getName());
        consumerProps.put("enable.auto.commit", "false");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
            TopicPartition p0 = new TopicPartition(topic, 0);
            TopicPartition p1 = new TopicPartition(topic, 1);
            consumer.assign(List.of(p0, p1));
            check(consumer.endOffsets(List.of(p0, p1)).equals(Map.of(p0, 500L, p1, 500L)), "end offsets");
            check(consumer.beginningOffsets(List.of(p0, p1)).equals(Map.of(p0, 0L, p1, 0L)), "beginning offsets");
            consumer.seekToBeginning(List.of(p0, p1));
            List<ConsumerRecord<String, String>> records = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (records.size() < 1000 && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(500)).forEach(records::add);
            }
            check(records.size() == 1000, "consumed " + records.size());
            ConsumerRecord<String, String> first = records.stream().filter(r -> r.partition() == 0).findFirst().get();
            check(first.value().equals("value-0") && first.key().equals("key-0") && first.timestamp() == base, "first " + first);
            check(new String(first.headers().lastHeader("n").value(), StandardCharsets.UTF_8).equals("0"), "header");

            Map<TopicPartition, OffsetAndTimestamp> byTime = consumer.offsetsForTimes(Map.of(p1, base + 101));
            check(byTime.get(p1).offset() == 50, "offset for time " + byTime);
            consumer.seek(p0, 321);
            List<ConsumerRecord<String, String>> fromSeek = new ArrayList<>();
            while (fromSeek.isEmpty()) {
                consumer.poll(Duration.ofMillis(500)).records(p0).forEach(fromSeek::add);
            }
            check(fromSeek.get(0).offset() == 321, "seek landed on " + fromSeek.get(0).offset());
        }

        groupSession(common, topic);
        transactionalSession(common);

        try (Admin admin = Admin.create(common)) {
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
            TopicPartition p0 = new TopicPartition(topic, 0);
            long low = admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(100))).lowWatermarks().get(p0).get().lowWatermark();
            check(low == 100, "low watermark " + low);
            admin.deleteTopics(Set.of(topic)).all().get();
        }
        System.out.println("java client session: ok");
    }
}
