#!/usr/bin/env bash
# The README's demo: validates and plans examples/quickstart.yaml with the debug build.
# (Downloading arrives with the engine; until then the demo stops at the plan.)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.build/debug/batchfetch
echo "\$ batchfetch validate examples/quickstart.yaml"
"$bin" validate examples/quickstart.yaml
echo
echo "\$ batchfetch plan examples/quickstart.yaml"
"$bin" plan examples/quickstart.yaml
