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
pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2> /dev/null; wait "$pid" 2> /dev/null; done
  rm -rf "$work"
}
trap stop_all EXIT

ports=($("$python" - <<'PY'
import socket
sockets = [socket.socket() for _ in range(6)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
PY
))
voters="1@127.0.0.1:${ports[3]},2@127.0.0.1:${ports[4]},3@127.0.0.1:${ports[5]}"
bootstrap="127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"

start() {
  local id=$1
  "$weir" broker --listen "127.0.0.1:${ports[$((id - 1))]}" \
    --controller-listen "127.0.0.1:${ports[$((id + 2))]}" --data-dir "$work/data-$id" \
    --metrics-listen off --set node.id="$id" --set controller.quorum.voters="$voters" \
    --set broker.session.timeout.ms=4000 --set broker.heartbeat.interval.ms=500 \
    >> "$work/node-$id.log" 2>&1 &
  pids[$id]=$!
}

for id in 1 2 3; do start "$id"; done
for _ in $(seq 1 100); do
  info=$("$weir" cluster info -b "127.0.0.1:${ports[0]}" 2> /dev/null) || info=""
  [ "$(grep -c '^  ' <<< "$(sed -n '/^brokers:/,/^[a-z]/p' <<< "$info")")" -ge 3 ] && break
  sleep 0.2
done
"$weir" topic create -b "$bootstrap" py-failover --partitions 3 --replicas 3 \
  -c min.insync.replicas=2 > /dev/null || { tail -20 "$work"/node-*.log; exit 1; }

"$python" "$here/cluster_failover.py" produce "$bootstrap" py-failover 6000 "$work/acked" &
producer=$!
sleep 1
leader=$("$weir" topic describe -b "$bootstrap" py-failover | awk '$1 == "partition" && $2 == 0 { print $4 }')
[ -n "$leader" ] || { echo "no leader of partition 0" >&2; exit 1; }
kill -0 "$producer" 2> /dev/null || { echo "the producer finished before the kill" >&2; exit 1; }
echo "killing broker $leader (leader of partition 0) while kafka-python writes" >&2
kill -9 "${pids[$leader]}"
wait "${pids[$leader]}" 2> /dev/null
sleep 5
start "$leader"
wait "$producer" || { echo "the producer did not finish well" >&2; exit 1; }
"$python" "$here/cluster_failover.py" verify "$bootstrap" py-failover "$work/acked"
