#!/usr/bin/env bash
# Rewrites Tests/Fixtures/help/*.txt from the debug binary's --help output (review the diff).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product batchfetch >/dev/null
for command in "" run validate plan check pin verify merge-reports schema cache; do
  name="batchfetch${command:+-$command}"
  COLUMNS=100 .build/debug/batchfetch $command --help > "Tests/Fixtures/help/$name.txt"
done
echo "updated Tests/Fixtures/help"
