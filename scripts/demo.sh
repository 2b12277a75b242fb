#!/usr/bin/env bash
# The README's demo: starts a local TestOrigin, then validates, plans and runs
# examples/quickstart.yaml against it, twice (the second run finds everything up to date); then
# examples/fetch-and-mirror.yaml (download, verify, PUT to a mirror, POST to an API), twice
# (the second run sends nothing), with the first run's report for people and its metrics;
# then examples/dataset-archive.yaml (an archive fetched,
# verified and unpacked into its tree), twice (the second run unpacks nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.build/debug/batchfetch
origin=.build/debug/batchfetch-test-origin

# A small dataset archive for examples/dataset-archive.yaml, served at /archives/dataset.tar.gz.
served=$(mktemp -d)
mkdir -p "$served/archives" "$served/src/dataset-1.0/train" "$served/src/dataset-1.0/val"
printf 'id,label\n1,cat\n2,dog\n' > "$served/src/dataset-1.0/train/labels.csv"
printf 'id,label\n3,cat\n' > "$served/src/dataset-1.0/val/labels.csv"
printf 'A tiny dataset for the batchfetch demo.\n' > "$served/src/dataset-1.0/README.txt"
printf 'not kept: include selects *.csv and *.txt\n' > "$served/src/dataset-1.0/train/notes.md"
tar -C "$served/src" -czf "$served/archives/dataset.tar.gz" dataset-1.0
rm -rf "$served/src"

port_file=$(mktemp)
"$origin" --demo --directory "$served" --port-file "$port_file" >/dev/null &
origin_pid=$!
trap 'kill $origin_pid 2>/dev/null; rm -rf "$port_file" "$served"' EXIT
for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.1; done
export BATCHFETCH_DEMO_ORIGIN="http://127.0.0.1:$(cat "$port_file")"
echo "TestOrigin listening at $BATCHFETCH_DEMO_ORIGIN"
rm -rf examples/quickstart-data examples/mirror-data examples/dataset-data

run() { echo; echo "\$ batchfetch $*"; "$bin" "$@"; }
run validate examples/quickstart.yaml
run plan examples/quickstart.yaml
run run examples/quickstart.yaml --metrics examples/quickstart-data/batchfetch.prom
run run examples/quickstart.yaml
run report examples/quickstart-data/batchfetch-report.json
echo; echo "\$ grep -v '^#' examples/quickstart-data/batchfetch.prom"; grep -v '^#' examples/quickstart-data/batchfetch.prom | sort
run plan examples/fetch-and-mirror.yaml
run run examples/fetch-and-mirror.yaml
run run examples/fetch-and-mirror.yaml
run run examples/dataset-archive.yaml
echo; echo "\$ find examples/dataset-data/dataset"; find examples/dataset-data/dataset | sort
run run examples/dataset-archive.yaml
echo
echo "report: examples/quickstart-data/batchfetch-report.json"
head -c 600 examples/quickstart-data/batchfetch-report.json
echo "..."
