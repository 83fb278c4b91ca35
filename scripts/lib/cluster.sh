# Three `weir broker` processes as a cluster on loopback, for the scripts that test clusters
# with real clients (sourced). Needs $weir (the binary) and $work (a scratch directory); extra
# broker properties go in $cluster_properties (an array of NAME=VALUE).
#   cluster_start            start nodes 1-3 and wait until all three are registered
#   cluster_kill ID          kill -9 node ID
#   cluster_restart ID       start node ID again
#   cluster_wait_in_sync     wait until no partition is under-replicated
#   cluster_leader TOPIC P   the leader of partition P of TOPIC
# $bootstrap lists the three client listeners; cluster_stop runs on EXIT.

cluster_properties=("${cluster_properties[@]}")
read -r -a cluster_ports <<< "$("${python:-python3}" - <<'PY'
import socket
sockets = [socket.socket() for _ in range(6)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
PY
)"
cluster_voters="1@127.0.0.1:${cluster_ports[3]},2@127.0.0.1:${cluster_ports[4]},3@127.0.0.1:${cluster_ports[5]}"
bootstrap="127.0.0.1:${cluster_ports[0]},127.0.0.1:${cluster_ports[1]},127.0.0.1:${cluster_ports[2]}"

cluster_restart() {
  local id=$1 sets=()
  for property in "${cluster_properties[@]}"; do sets+=(--set "$property"); done
  "$weir" broker --listen "127.0.0.1:${cluster_ports[$((id - 1))]}" \
    --controller-listen "127.0.0.1:${cluster_ports[$((id + 2))]}" --data-dir "$work/data-$id" \
    --metrics-listen off --set node.id="$id" --set controller.quorum.voters="$cluster_voters" \
    --set broker.session.timeout.ms=4000 --set broker.heartbeat.interval.ms=500 "${sets[@]}" \
    >> "$work/node-$id.log" 2>&1 &
  # In a file too: a restart from a background subshell (a chaos loop) must be found by the
  # shell that stops the cluster.
  echo $! > "$work/node-$id.pid"
}

cluster_kill() {
  local pid
  pid=$(cat "$work/node-$1.pid" 2> /dev/null) || return 0
  rm -f "$work/node-$1.pid"
  kill -9 "$pid" 2> /dev/null || return 0
  wait "$pid" 2> /dev/null
  for _ in $(seq 1 100); do kill -0 "$pid" 2> /dev/null || return 0; sleep 0.05; done
}

cluster_stop() {
  for id in 1 2 3; do cluster_kill "$id"; done
}

# Asked of the first node that answers (any may be down).
cluster_info() {
  local address
  for address in ${bootstrap//,/ }; do
    "$weir" cluster info -b "$address" 2> /dev/null && return 0
  done
  return 1
}

cluster_start() {
  for id in 1 2 3; do cluster_restart "$id"; done
  for _ in $(seq 1 150); do
    [ "$(cluster_info | sed -n '/^brokers:/,/^[a-z]/p' | grep -c '^  ')" -ge 3 ] && return 0
    sleep 0.2
  done
  echo "the cluster did not form; node logs:" >&2
  tail -20 "$work"/node-*.log >&2
  return 1
}

cluster_wait_in_sync() {
  for _ in $(seq 1 300); do
    local info
    info=$(cluster_info)
    if [ "$(sed -n '/^brokers:/,/^[a-z]/p' <<< "$info" | grep -c '^  ')" -ge 3 ] &&
      grep -q '^under-replicated partitions: 0' <<< "$info"; then
      return 0
    fi
    sleep 0.2
  done
  echo "the cluster did not get back in sync:" >&2
  cluster_info >&2
  return 1
}

cluster_leader() {
  local address
  for address in ${bootstrap//,/ }; do
    "$weir" topic describe -b "$address" "$1" 2> /dev/null |
      awk -v p="$2" '$1 == "partition" && $2 == p { print $4 }' && return 0
  done
}
