// A kafkajs (pure JavaScript protocol implementation) session against a broker: admin, producer,
// offsets. kafkajs consumers always join a group, so consuming waits for the consumer-groups issue.
// Usage: NODE_PATH=<dir with node_modules> node kafkajs_smoke.js HOST:PORT
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function main(bootstrap) {
  const kafka = new Kafka({ clientId: 'weir-smoke', brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const topic = `kafkajs-smoke-${Date.now()}`;
  check(await admin.createTopics({ topics: [{ topic, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '3600000' }] }] }), 'created');
  const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
  check(metadata.topics[0].partitions.length === 2, 'two partitions');
  const configs = await admin.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false });
  const retention = configs.resources[0].configEntries.find((e) => e.configName === 'retention.ms');
  check(retention && retention.configValue === '3600000', `retention.ms ${JSON.stringify(retention)}`);

  const producer = kafka.producer();
  await producer.connect();
  const base = Date.now() - 60000;
  for (const compression of [CompressionTypes.None, CompressionTypes.GZIP]) {
    const messages = [];
    for (let i = 0; i < 500; i++) {
      messages.push({ key: `k${i % 5}`, value: `v${i}`, partition: i % 2, timestamp: String(base + i), headers: { n: String(i) } });
    }
    const results = await producer.send({ topic, acks: -1, compression, messages });
    check(results.every((r) => r.errorCode === 0), `produce ${JSON.stringify(results)}`);
  }
  await producer.disconnect();

  const offsets = await admin.fetchTopicOffsets(topic);
  check(offsets.every((o) => o.high === '500' && o.low === '0'), `offsets ${JSON.stringify(offsets)}`);
  const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, base + 101);
  const p1 = byTime.find((o) => o.partition === 1);
  check(p1.offset === '50', `offset by time ${JSON.stringify(byTime)}`);
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '100' }] });
  const after = await admin.fetchTopicOffsets(topic);
  check(after.find((o) => o.partition === 0).low === '100', `after delete records ${JSON.stringify(after)}`);
  await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
  await admin.deleteTopics({ topics: [topic] });
  await admin.disconnect();
  console.log('kafkajs smoke: ok');
}

main(process.argv[2]).catch((error) => {
  console.error(`kafkajs smoke: FAIL: ${error.stack || error}`);
  process.exit(1);
});
