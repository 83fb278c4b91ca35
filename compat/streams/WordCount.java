// An unmodified Kafka Streams application with processing.guarantee=exactly_once_v2, used as a
// yardstick for Weir's transactions (compat/streams/run.sh kills it with -9 and restarts it).
//
//   java WordCount produce BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC LINES
//                                                       creates both topics, writes the input
//   java WordCount app BOOTSTRAP APP_ID STATE_DIR INPUT_TOPIC OUTPUT_TOPIC
//                                                       runs the word count until killed
//   java WordCount verify BOOTSTRAP OUTPUT_TOPIC LINES TIMEOUT_S
//                                                       reads the output (read_committed) and
//                                                       checks it is exact
//
// The input is generated from a fixed seed, so every mode knows the answer. The state store
// cache is off, so every input word yields one output record: word -> its count so far. Exactly
// once therefore means that, in the committed output, each word's counts are exactly 1, 2, ... n
// with n its number of occurrences: a lost update leaves a gap, a duplicate repeats a number.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;

public class WordCount {
    static final int WORDS_PER_LINE = 5;
    static final int VOCABULARY = 40;

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "produce" -> produce(args[1], args[2], args[3], Integer.parseInt(args[4]));
            case "app" -> app(args[1], args[2], args[3], args[4], args[5]);
            case "verify" -> System.exit(
                verify(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4])));
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static List<String> lines(int count) {
        Random random = new Random(20261129L);
        List<String> lines = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            StringBuilder line = new StringBuilder();
            for (int w = 0; w < WORDS_PER_LINE; w++) {
                if (w > 0) line.append(' ');
                line.append("w").append(random.nextInt(VOCABULARY));
            }
            lines.add(line.toString());
        }
        return lines;
    }

    static Map<String, Long> expectedCounts(int count) {
        Map<String, Long> counts = new TreeMap<>();
        for (String line : lines(count)) {
            for (String word : line.split(" ")) counts.merge(word, 1L, Long::sum);
        }
        return counts;
    }

    /** Replicas of every topic: 1 on one broker; WORDCOUNT_REPLICATION_FACTOR on a cluster. */
    static short replicationFactor() {
        return Short.parseShort(System.getenv().getOrDefault("WORDCOUNT_REPLICATION_FACTOR", "1"));
    }

    /**
     * The application's own client properties (security.protocol, sasl.*, ssl.*…) from the file
     * WORDCOUNT_APP_PROPERTIES names, if any: the secured run gives them; input and verification
     * stay on the admin listener.
     */
    static Properties appProperties() {
        Properties props = new Properties();
        String path = System.getenv("WORDCOUNT_APP_PROPERTIES");
        if (path != null && !path.isEmpty()) {
            try (java.io.FileReader reader = new java.io.FileReader(path)) {
                props.load(reader);
            } catch (java.io.IOException error) {
                throw new java.io.UncheckedIOException(error);
            }
        }
        return props;
    }

    static void produce(String bootstrap, String topic, String output, int count)
            throws Exception {
        Properties adminProps = new Properties();
        adminProps.put("bootstrap.servers", bootstrap);
        try (org.apache.kafka.clients.admin.Admin admin =
                 org.apache.kafka.clients.admin.Admin.create(adminProps)) {
            admin.createTopics(List.of(
                new org.apache.kafka.clients.admin.NewTopic(topic, 3, replicationFactor()),
                new org.apache.kafka.clients.admin.NewTopic(output, 3, replicationFactor())))
                .all().get();
        }
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<String, String> producer =
                 new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            int i = 0;
            for (String line : lines(count)) {
                producer.send(new ProducerRecord<>(topic, "line-" + i++, line));
            }
            producer.flush();
        }
        System.out.println("produced " + count + " lines to " + topic);
    }

    static void app(String bootstrap, String appId, String stateDir, String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.split(" ")))
            .peek((key, word) -> reportProgress())
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count()
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, (int) replicationFactor());
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // A killed instance's members leave the group when their session ends: keep it short.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1500);
        props.putAll(appProperties());
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setUncaughtExceptionHandler(error -> {
            System.err.println("stream thread failed: " + error);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
        streams.start();
        System.out.println("word count started");
    }

    static final java.util.concurrent.atomic.AtomicLong PROCESSED =
        new java.util.concurrent.atomic.AtomicLong();

    /** Prints "processed N" every 5000 words since this process started (run.sh kills by it). */
    static void reportProgress() {
        long processed = PROCESSED.incrementAndGet();
        if (processed % 5000 == 0) {
            System.out.println("processed " + processed);
            System.out.flush();
        }
    }

    /** Returns 0 when the committed output is exact, 1 otherwise (with the reason printed). */
    static int verify(String bootstrap, String topic, int count, int timeoutSeconds) {
        Map<String, Long> expected = expectedCounts(count);
        long expectedRecords = expected.values().stream().mapToLong(Long::longValue).sum();
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        Map<String, List<Long>> seen = new HashMap<>();
        long records = 0;
        long deadline = System.currentTimeMillis() + timeoutSeconds * 1000L;
        try (KafkaConsumer<String, Long> consumer =
                 new KafkaConsumer<>(props, new StringDeserializer(), new LongDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            consumer.partitionsFor(topic).forEach(
                p -> partitions.add(new TopicPartition(topic, p.partition())));
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            while (records < expectedRecords && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(500))) {
                    seen.computeIfAbsent(record.key(), k -> new ArrayList<>()).add(record.value());
                    records++;
                }
            }
            // Anything past the expected number is a duplicate: read a little longer to see it.
            long settle = System.currentTimeMillis() + 2000;
            while (System.currentTimeMillis() < settle) {
                for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
                    seen.computeIfAbsent(record.key(), k -> new ArrayList<>()).add(record.value());
                    records++;
                }
            }
        }
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, Long> entry : expected.entrySet()) {
            List<Long> counts = seen.getOrDefault(entry.getKey(), List.of());
            for (int i = 0; i < counts.size(); i++) {
                if (counts.get(i) != i + 1) {
                    problems.add(entry.getKey() + ": update " + (i + 1) + " says " + counts.get(i)
                        + " (a lost or duplicated update)");
                    break;
                }
            }
            if (counts.size() != entry.getValue()) {
                problems.add(entry.getKey() + ": " + counts.size() + " updates, expected "
                    + entry.getValue());
            }
        }
        for (String word : seen.keySet()) {
            if (!expected.containsKey(word)) problems.add("unexpected word " + word);
        }
        System.out.println("word count output: " + records + " committed records, expected "
            + expectedRecords + " over " + expected.size() + " words");
        if (problems.isEmpty()) {
            System.out.println("word count: exact");
            return 0;
        }
        problems.stream().limit(20).forEach(p -> System.out.println("word count: " + p));
        return 1;
    }
}
