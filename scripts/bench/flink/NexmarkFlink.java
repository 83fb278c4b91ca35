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
        "q4", "SELECT Q.category, AVG(Q.final) AS avg_final FROM ("
            + " SELECT MAX(B.price) AS final, A.category FROM auction A, bid B"
            + " WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires"
            + " GROUP BY A.id, A.category) Q GROUP BY Q.category",
        "q5", "SELECT AuctionBids.auction, AuctionBids.num FROM ("
            + " SELECT auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime"
            + " FROM TABLE(HOP(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))"
            + " GROUP BY auction, window_start, window_end) AS AuctionBids"
            + " JOIN (SELECT MAX(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime FROM ("
            + "   SELECT COUNT(*) AS num, window_start AS starttime, window_end AS endtime"
            + "   FROM TABLE(HOP(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND))"
            + "   GROUP BY auction, window_start, window_end) AS CountBids"
            + " GROUP BY CountBids.starttime, CountBids.endtime) AS MaxBids"
            + " ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime"
            + " AND AuctionBids.num >= MaxBids.maxn",
        // Nexmark's q7 compares the bids with window_end in a regular join; its window_time
        // (end - 1 ms, a time attribute) makes the same bound an interval join, as Weir's.
        "q7", "SELECT B.auction, B.price, B.bidder, B.`dateTime`, B.extra FROM bid B"
            + " JOIN (SELECT MAX(price) AS maxprice, window_time AS wt"
            + "   FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
            + "   GROUP BY window_start, window_end, window_time) B1"
            + " ON B.price = B1.maxprice"
            + " AND B.ts BETWEEN B1.wt - INTERVAL '9.999' SECOND AND B1.wt + INTERVAL '0.001' SECOND",
        "q8", "SELECT P.id, P.name, P.starttime FROM ("
            + " SELECT id, name, window_start AS starttime, window_end AS endtime"
            + " FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
            + " GROUP BY id, name, window_start, window_end) P"
            + " JOIN (SELECT seller, window_start AS starttime, window_end AS endtime"
            + " FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
            + " GROUP BY seller, window_start, window_end) A"
            + " ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime",
        "q12", "SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime"
            + " FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND))"
            + " GROUP BY bidder, window_start, window_end");

    /** The output columns of each query (the sink table's schema). */
    private static final Map<String, String> OUTPUTS = Map.of(
        "q0", "auction BIGINT, bidder BIGINT, price BIGINT, `dateTime` BIGINT, extra STRING",
        "q1", "auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), `dateTime` BIGINT, extra STRING",
        "q2", "auction BIGINT, price BIGINT",
        "q3", "name STRING, city STRING, state STRING, id BIGINT",
        "q4", "category BIGINT, avg_final BIGINT, PRIMARY KEY (category) NOT ENFORCED",
        "q5", "auction BIGINT, num BIGINT",
        "q7", "auction BIGINT, price BIGINT, bidder BIGINT, `dateTime` BIGINT, extra STRING",
        "q8", "id BIGINT, name STRING, starttime TIMESTAMP(3)",
        "q12", "bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3)");

    /** Every input's event time: its `dateTime`, with a watermark a second behind. */
    private static final String TIME =
        " ts AS TO_TIMESTAMP_LTZ(`dateTime`, 3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND";

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
        // Persons and auctions are windowed in q8 only (q3 joins them as they are: a regular
        // join refuses time attributes in its rows).
        String sellerTime = query.equals("q8") ? "," + TIME : "";
        tables.executeSql("CREATE TABLE person (id BIGINT, name STRING, emailAddress STRING,"
            + " creditCard STRING, city STRING, state STRING, `dateTime` BIGINT, extra STRING"
            + sellerTime + ") WITH ("
            + source("nexmark-person", bootstrap) + ")");
        tables.executeSql("CREATE TABLE auction (id BIGINT, itemName STRING, description STRING,"
            + " initialBid BIGINT, reserve BIGINT, `dateTime` BIGINT, expires BIGINT, seller BIGINT,"
            + " category BIGINT, extra STRING" + sellerTime + ") WITH ("
            + source("nexmark-auction", bootstrap) + ")");
        tables.executeSql("CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT,"
            + " channel STRING, url STRING, `dateTime` BIGINT, extra STRING," + TIME + ") WITH (" + source("nexmark-bid", bootstrap) + ")");
        // q4's result is updating: an upsert-kafka sink (the view's latest row per category).
        String sink = query.equals("q4")
            ? "'connector' = 'upsert-kafka', 'key.format' = 'json', 'value.format' = 'json',"
            : "'connector' = 'kafka', 'format' = 'json',";
        tables.executeSql("CREATE TABLE output (" + OUTPUTS.get(query) + ") WITH ("
            + sink + " 'topic' = '" + output + "',"
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
