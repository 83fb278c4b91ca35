"""kafka-python writes the records of EXPECTED (one a line) to partition 0 of TOPIC and reads
them back from the beginning, printing what it read, over the security the environment names:
SECURITY_PROTOCOL (SSL, SASL_SSL, SASL_PLAINTEXT), CA, CERT and KEY (mTLS), SASL_MECHANISM,
SASL_USERNAME, SASL_PASSWORD. Usage: roundtrip.py BOOTSTRAP TOPIC EXPECTED"""
import os
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

bootstrap, topic, expected = sys.argv[1:4]
env = os.environ.get
common = {"bootstrap_servers": bootstrap, "security_protocol": env("SECURITY_PROTOCOL", "PLAINTEXT")}
if env("CA"):
    common["ssl_cafile"] = env("CA")
if env("CERT"):
    common["ssl_certfile"] = env("CERT")
    common["ssl_keyfile"] = env("KEY")
if env("SASL_MECHANISM"):
    common["sasl_mechanism"] = env("SASL_MECHANISM")
    common["sasl_plain_username"] = env("SASL_USERNAME")
    common["sasl_plain_password"] = env("SASL_PASSWORD")
values = [line.rstrip("\n") for line in open(expected)]
producer = KafkaProducer(acks="all", **common)
futures = [producer.send(topic, value=value.encode(), partition=0) for value in values]
for future in futures:
    future.get(timeout=30)
producer.close()
consumer = KafkaConsumer(enable_auto_commit=False, consumer_timeout_ms=10000, **common)
partition = TopicPartition(topic, 0)
consumer.assign([partition])
consumer.seek_to_beginning(partition)
read = []
for message in consumer:
    read.append(message.value.decode())
    if len(read) == len(values):
        break
consumer.close()
print("\n".join(read))
