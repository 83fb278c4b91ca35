// kafkajs writes the records of EXPECTED (one a line) to partition 0 of TOPIC and reads them
// back from the beginning, printing what it read, over the security the environment names:
// SECURITY_PROTOCOL (SSL, SASL_SSL, SASL_PLAINTEXT), CA, CERT and KEY (mTLS), SASL_MECHANISM
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), SASL_USERNAME, SASL_PASSWORD.
// Usage: NODE_PATH=…/node_modules node roundtrip.js BOOTSTRAP TOPIC EXPECTED
const fs = require("fs");
const { Kafka, logLevel } = require("kafkajs");

const [bootstrap, topic, expected] = process.argv.slice(2);
const env = process.env;
const protocol = (env.SECURITY_PROTOCOL || "PLAINTEXT").toUpperCase();
const config = { clientId: "weir-compat", brokers: [bootstrap], logLevel: logLevel.NOTHING };
if (protocol.endsWith("SSL")) {
  config.ssl = { ca: [fs.readFileSync(env.CA)] };
  if (env.CERT) {
    config.ssl.cert = fs.readFileSync(env.CERT);
    config.ssl.key = fs.readFileSync(env.KEY);
  }
}
if (protocol.startsWith("SASL")) {
  config.sasl = {
    mechanism: env.SASL_MECHANISM.toLowerCase(),
    username: env.SASL_USERNAME,
    password: env.SASL_PASSWORD,
  };
}

async function main() {
  const values = fs.readFileSync(expected, "utf8").split("\n").filter((line) => line !== "");
  const kafka = new Kafka(config);
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: values.map((value) => ({ value, partition: 0 })) });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: `${topic}-reader` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const read = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${read.length} records read`)), 30000);
    consumer.run({
      eachMessage: async ({ message }) => {
        read.push(message.value.toString());
        if (read.length === values.length) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  console.log(read.join("\n"));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
