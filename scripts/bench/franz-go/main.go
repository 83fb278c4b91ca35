// A second yardstick client for the benchmarks: franz-go (pure Go, crypto/tls) producing or
// consuming COUNT records of SIZE bytes on partition 0 of TOPIC, as rdkafka_performance does
// (acks=1, linger 5 ms, no idempotence, no compression, records read from the beginning), optionally over TLS
// trusting the CA file given. Prints one line: "<mode> <count> msgs in <s> s: <rate> msgs/s,
// <MB/s> MB/s". A client whose own TLS does not take most of a 2-core machine lets the
// benchmark see what TLS costs the broker.
// Usage: go run . -mode produce|consume -brokers HOST:PORT -topic T -size BYTES -count N [-ca FILE]
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	mode := flag.String("mode", "produce", "produce or consume")
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap address")
	topic := flag.String("topic", "bench", "topic (partition 0)")
	size := flag.Int("size", 100, "value bytes per record")
	count := flag.Int("count", 1000000, "records")
	ca := flag.String("ca", "", "PEM CA file: connect over TLS trusting it")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	flag.Parse()
	if *size < 0 || *count <= 0 {
		fail("size must be >= 0 and count > 0")
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(*brokers),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
		// franz-go compresses with snappy unless told otherwise; rdkafka_performance does not.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.MaxBufferedRecords(1 << 20),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.AllowAutoTopicCreation(),
	}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			fail("reading the CA: %v", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			fail("no certificate in %s", *ca)
		}
		dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{RootCAs: roots}}
		opts = append(opts, kgo.Dialer(dialer.DialContext))
	}
	if *mode == "consume" {
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			*topic: {0: kgo.NewOffset().AtStart()},
		}))
	}
	client, err := kgo.NewClient(opts...)
	if err != nil {
		fail("client: %v", err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var bytes int64
	started := time.Now()
	switch *mode {
	case "produce":
		bytes = produce(ctx, client, *topic, *size, *count)
	case "consume":
		bytes = consume(ctx, client, *count)
	default:
		fail("unknown mode %q", *mode)
	}
	seconds := time.Since(started).Seconds()
	fmt.Printf("%s %d msgs in %.3f s: %.0f msgs/s, %.2f MB/s\n", *mode, *count, seconds,
		float64(*count)/seconds, float64(bytes)/seconds/1e6)
}

func produce(ctx context.Context, client *kgo.Client, topic string, size, count int) int64 {
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	failed := make(chan error, 1)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	}
	for i := 0; i < count; i++ {
		client.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: value}, done)
	}
	if err := client.Flush(ctx); err != nil {
		fail("flush: %v", err)
	}
	select {
	case err := <-failed:
		fail("produce: %v", err)
	default:
	}
	return int64(size) * int64(count)
}

func consume(ctx context.Context, client *kgo.Client, count int) int64 {
	var read int
	var bytes int64
	for read < count {
		fetches := client.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			fail("consume: %d of %d records read: %v", read, count, err)
		}
		fetches.EachError(func(topic string, partition int32, err error) {
			fail("consume %s/%d: %v", topic, partition, err)
		})
		fetches.EachRecord(func(record *kgo.Record) {
			read++
			bytes += int64(len(record.Value))
		})
	}
	return bytes
}
