"""Compares the transcripts of compat/scenario run against Weir and against Apache Kafka.

Every step must match, except the steps named in known-differences.json (each with its reason);
a listed step that no longer differs is reported too, so the list stays true.
Prints one line per mismatch and a closing "differential: N passed, N failed" line.
Usage: compare.py WEIR.json KAFKA.json KNOWN_DIFFERENCES.json
"""

import json
import sys


def main(weir_path, kafka_path, known_path):
    weir = json.load(open(weir_path))
    kafka = json.load(open(kafka_path))
    known = json.load(open(known_path))
    passed = failed = 0
    for step in sorted(set(weir) | set(kafka)):
        same = weir.get(step) == kafka.get(step)
        if step in known:
            if same:
                failed += 1
                print(f"STALE known difference {step}: both brokers now agree; remove it from {known_path}")
            else:
                passed += 1
            continue
        if same:
            passed += 1
        else:
            failed += 1
            print(f"DIFFERS {step}:\n  weir:  {json.dumps(weir.get(step), sort_keys=True)}\n"
                  f"  kafka: {json.dumps(kafka.get(step), sort_keys=True)}")
    print(f"differential: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
