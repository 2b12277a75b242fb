#!/usr/bin/env bash
# Coverage-guided fuzzing of the manifest loader (libFuzzer, from the Swift toolchain) for
# SECONDS (default 60). The corpus starts from examples/, the invalid-manifest fixtures and every
# input that ever crashed (Tests/Fixtures/fuzz/); a new crash, hang (-timeout) or memory blow-up
# (-rss_limit_mb) is written to Tests/Fixtures/fuzz/ — commit it once fixed, and
# `FuzzFixtureTests` replays it in every test run — and this script fails.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
# Not strict: the fuzzer builds the package as a dependency, where unsafe flags have no place.
BATCHFETCH_STRICT= swift build --package-path Fuzz --build-path .build-fuzz \
  -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library -Xswiftc -use-ld=lld
corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
cp examples/*.yaml Tests/Fixtures/invalid/*.yaml Tests/Fixtures/fuzz/* "$corpus"/
echo "fuzzing the manifest loader for ${seconds}s ($(ls "$corpus" | wc -l) seed inputs)"
status=0
SWIFT_BACKTRACE=enable=no .build-fuzz/debug/ManifestFuzz "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix=Tests/Fixtures/fuzz/ > "$corpus.log" 2>&1 || status=$?
grep -E '^(Done|stat::number_of_executed_units|==[0-9]+==|SUMMARY|Test unit written|.*ERROR)' "$corpus.log" || true
[ "$status" -eq 0 ] || tail -40 "$corpus.log"
rm -f "$corpus.log"
exit "$status"
