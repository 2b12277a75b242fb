#!/usr/bin/env bash
# The README's demo: starts a local TestOrigin, then validates, plans and runs
# examples/quickstart.yaml against it, twice (the second run finds everything up to date); then
# examples/fetch-and-mirror.yaml (download, verify, PUT to a mirror, POST to an API), twice
# (the second run sends nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.build/debug/batchfetch
origin=.build/debug/batchfetch-test-origin

port_file=$(mktemp)
"$origin" --demo --port-file "$port_file" >/dev/null &
origin_pid=$!
trap 'kill $origin_pid 2>/dev/null; rm -f "$port_file"' EXIT
for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.1; done
export BATCHFETCH_DEMO_ORIGIN="http://127.0.0.1:$(cat "$port_file")"
echo "TestOrigin listening at $BATCHFETCH_DEMO_ORIGIN"
rm -rf examples/quickstart-data examples/mirror-data

run() { echo; echo "\$ batchfetch $*"; "$bin" "$@"; }
run validate examples/quickstart.yaml
run plan examples/quickstart.yaml
run run examples/quickstart.yaml
run run examples/quickstart.yaml
run plan examples/fetch-and-mirror.yaml
run run examples/fetch-and-mirror.yaml
run run examples/fetch-and-mirror.yaml
echo
echo "report: examples/quickstart-data/batchfetch-report.json"
head -c 600 examples/quickstart-data/batchfetch-report.json
echo "..."
