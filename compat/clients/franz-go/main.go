// franz-go writes the records of EXPECTED (one a line) to partition 0 of TOPIC and reads them
// back from the beginning, printing what it read, over the security the environment names:
// SECURITY_PROTOCOL (SSL, SASL_SSL, SASL_PLAINTEXT), CA, CERT and KEY (mTLS), SASL_MECHANISM
// (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), SASL_USERNAME, SASL_PASSWORD.
// Usage: go run . BOOTSTRAP TOPIC EXPECTED
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func security() []kgo.Opt {
	protocol := strings.ToUpper(os.Getenv("SECURITY_PROTOCOL"))
	var opts []kgo.Opt
	if strings.HasSuffix(protocol, "SSL") {
		ca, err := os.ReadFile(os.Getenv("CA"))
		if err != nil {
			fail("reading the CA: %v", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca) {
			fail("no certificate in %s", os.Getenv("CA"))
		}
		config := &tls.Config{RootCAs: roots}
		if cert := os.Getenv("CERT"); cert != "" {
			pair, err := tls.LoadX509KeyPair(cert, os.Getenv("KEY"))
			if err != nil {
				fail("reading the client certificate: %v", err)
			}
			config.Certificates = []tls.Certificate{pair}
		}
		dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: config}
		opts = append(opts, kgo.Dialer(dialer.DialContext))
	}
	if strings.HasPrefix(protocol, "SASL") {
		user, pass := os.Getenv("SASL_USERNAME"), os.Getenv("SASL_PASSWORD")
		var mechanism sasl.Mechanism
		switch os.Getenv("SASL_MECHANISM") {
		case "PLAIN":
			mechanism = plain.Auth{User: user, Pass: pass}.AsMechanism()
		case "SCRAM-SHA-256":
			mechanism = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			mechanism = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		default:
			fail("unknown SASL_MECHANISM %q", os.Getenv("SASL_MECHANISM"))
		}
		opts = append(opts, kgo.SASL(mechanism))
	}
	return opts
}

func main() {
	if len(os.Args) != 4 {
		fail("usage: BOOTSTRAP TOPIC EXPECTED")
	}
	bootstrap, topic, expected := os.Args[1], os.Args[2], os.Args[3]
	text, err := os.ReadFile(expected)
	if err != nil {
		fail("reading %s: %v", expected, err)
	}
	values := strings.Fields(string(text))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	opts := append(security(), kgo.SeedBrokers(bootstrap), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	producer, err := kgo.NewClient(opts...)
	if err != nil {
		fail("producer: %v", err)
	}
	records := make([]*kgo.Record, len(values))
	for i, value := range values {
		records[i] = &kgo.Record{Topic: topic, Partition: 0, Value: []byte(value)}
	}
	if err := producer.ProduceSync(ctx, records...).FirstErr(); err != nil {
		fail("producing: %v", err)
	}
	producer.Close()

	consumer, err := kgo.NewClient(append(security(), kgo.SeedBrokers(bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		fail("consumer: %v", err)
	}
	defer consumer.Close()
	var read []string
	for len(read) < len(values) {
		fetches := consumer.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			fail("fetching after %d records: %v", len(read), errs[0].Err)
		}
		fetches.EachRecord(func(record *kgo.Record) { read = append(read, string(record.Value)) })
	}
	fmt.Println(strings.Join(read, "\n"))
}
