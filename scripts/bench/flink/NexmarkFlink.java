import java.util.Map;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

/**
 * The yardstick side of scripts/bench/nexmark.sh: one Nexmark query in Flink SQL on a local
 * MiniCluster, reading the topics `weir nexmark generate` wrote (JSON, read_committed, from the
 * earliest to the latest offset, so the job ends when its input is done) and writing its result
 * to a Kafka topic exactly once (a transaction per checkpoint, like Weir's jobs).
 *
 * Usage: NexmarkFlink BOOTSTRAP QUERY OUTPUT_TOPIC PARALLELISM CHECKPOINT_MS CHECKPOINT_DIR
 * (checkpoints go to files under CHECKPOINT_DIR, as in a deployment: the default, the
 * JobManager's memory, refuses state over 5 MB, which q12's windows pass at a few million bids).
 * Prints "flink QUERY: job ran N ms" when the job has finished.
 */
public class NexmarkFlink {
    private static final Map<String, String> QUERIES = Map.of(
        "q0", "SELECT auction, bidder, price, `dateTime`, extra FROM bid",
        "q1", "SELECT auction, bidder, 0.908 * price AS price, `dateTime`, extra FROM bid",
        "q2", "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0",
        "q3", "SELECT P.name, P.city, P.state, A.id FROM auction AS A"
            + " INNER JOIN person AS P ON A.seller = P.id"
            + " WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')",
        "q12", "SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime"
            + " FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
            + " GROUP BY bidder, window_start, window_end");

    /** The output columns of each query (the sink table's schema). */
    private static final Map<String, String> OUTPUTS = Map.of(
        "q0", "auction BIGINT, bidder BIGINT, price BIGINT, `dateTime` BIGINT, extra STRING",
        "q1", "auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), `dateTime` BIGINT, extra STRING",
        "q2", "auction BIGINT, price BIGINT",
        "q3", "name STRING, city STRING, state STRING, id BIGINT",
        "q12", "bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3)");

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String query = args[1];
        String output = args[2];
        int parallelism = Integer.parseInt(args[3]);
        long checkpointMs = Long.parseLong(args[4]);
        String checkpointDir = args[5];
        if (!QUERIES.containsKey(query)) {
            throw new IllegalArgumentException("no query " + query + " (have " + QUERIES.keySet() + ")");
        }
        Configuration conf = new Configuration();
        conf.setString("execution.checkpointing.interval", checkpointMs + " ms");
        conf.setString("execution.checkpointing.mode", "EXACTLY_ONCE");
        conf.setString("execution.checkpointing.storage", "filesystem");
        conf.setString("execution.checkpointing.dir", "file://" + checkpointDir);
        conf.setString("rest.bind-port", "0");
        StreamExecutionEnvironment env =
            StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
        StreamTableEnvironment tables = StreamTableEnvironment.create(env);
        tables.executeSql("CREATE TABLE person (id BIGINT, name STRING, emailAddress STRING,"
            + " creditCard STRING, city STRING, state STRING, `dateTime` BIGINT, extra STRING) WITH ("
            + source("nexmark-person", bootstrap) + ")");
        tables.executeSql("CREATE TABLE auction (id BIGINT, itemName STRING, description STRING,"
            + " initialBid BIGINT, reserve BIGINT, `dateTime` BIGINT, expires BIGINT, seller BIGINT,"
            + " category BIGINT, extra STRING) WITH (" + source("nexmark-auction", bootstrap) + ")");
        tables.executeSql("CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT,"
            + " channel STRING, url STRING, `dateTime` BIGINT, extra STRING,"
            + " ts AS TO_TIMESTAMP_LTZ(`dateTime`, 3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)"
            + " WITH (" + source("nexmark-bid", bootstrap) + ")");
        tables.executeSql("CREATE TABLE output (" + OUTPUTS.get(query) + ") WITH ("
            + "'connector' = 'kafka', 'topic' = '" + output + "', 'format' = 'json',"
            + " 'properties.bootstrap.servers' = '" + bootstrap + "',"
            + " 'sink.delivery-guarantee' = 'exactly-once',"
            + " 'sink.transactional-id-prefix' = '" + output + "-" + System.nanoTime() + "',"
            + " 'properties.transaction.timeout.ms' = '600000')");
        long start = System.nanoTime();
        TableResult result = tables.executeSql("INSERT INTO output " + QUERIES.get(query));
        result.await();
        long ms = (System.nanoTime() - start) / 1_000_000;
        System.out.println("flink " + query + ": job ran " + ms + " ms");
    }

    private static String source(String topic, String bootstrap) {
        return "'connector' = 'kafka', 'topic' = '" + topic + "', 'format' = 'json',"
            + " 'properties.bootstrap.servers' = '" + bootstrap + "',"
            + " 'properties.isolation.level' = 'read_committed',"
            + " 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset'";
    }
}
