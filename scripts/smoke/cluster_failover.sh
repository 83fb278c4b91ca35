#!/usr/bin/env bash
# Three `weir broker` processes as a cluster; kafka-python writes (idempotent, acks=all) while
# the leader of partition 0 is killed -9 and restarted; every acknowledged record must then be
# read exactly once by a consumer group. Exits non-zero on any loss, duplicate or stall.
# Usage: cluster_failover.sh PATH/TO/weir PATH/TO/python
set -uo pipefail
weir=$1
python=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
# shellcheck source=../lib/cluster.sh
source "$here/../lib/cluster.sh"
trap 'cluster_stop; rm -rf "$work"' EXIT

cluster_start || exit 1
"$weir" topic create -b "$bootstrap" py-failover --partitions 3 --replicas 3 \
  -c min.insync.replicas=2 > /dev/null || { tail -20 "$work"/node-*.log; exit 1; }

"$python" "$here/cluster_failover.py" produce "$bootstrap" py-failover 6000 "$work/acked" &
producer=$!
sleep 1
leader=$(cluster_leader py-failover 0)
[ -n "$leader" ] || { echo "no leader of partition 0" >&2; exit 1; }
kill -0 "$producer" 2> /dev/null || { echo "the producer finished before the kill" >&2; exit 1; }
echo "killing broker $leader (leader of partition 0) while kafka-python writes" >&2
cluster_kill "$leader"
sleep 5
cluster_restart "$leader"
wait "$producer" || { echo "the producer did not finish well" >&2; exit 1; }
"$python" "$here/cluster_failover.py" verify "$bootstrap" py-failover "$work/acked"
