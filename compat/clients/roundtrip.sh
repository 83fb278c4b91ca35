# Sourced by the compat scripts: `roundtrip CLIENT BOOTSTRAP TOPIC EXPECTED` runs the round trip
# of compat/clients with kafka-python, kafkajs or franz-go (security from the environment, as
# each program's header says) and prints the records read back. Needs $cache (the venv and node
# modules scripts/test.sh installs) and $work (franz-go's binary is built there once).
clients_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
roundtrip() {
  local client=$1
  shift
  case $client in
    kafka-python) "$cache/venv/bin/python" "$clients_dir/roundtrip.py" "$@" ;;
    kafkajs) NODE_PATH=$cache/node/node_modules node "$clients_dir/roundtrip.js" "$@" ;;
    franz-go)
      if [ ! -x "$work/franz-roundtrip" ]; then
        (cd "$clients_dir/franz-go" && GOFLAGS=-mod=mod go build -o "$work/franz-roundtrip" .) >&2 || return 1
      fi
      "$work/franz-roundtrip" "$@" ;;
    *) echo "unknown client $client" >&2; return 1 ;;
  esac
}
