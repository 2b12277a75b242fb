#!/usr/bin/env bash
# Builds bench/nio-probe (AsyncHTTPClient; a separate package so batchfetch does not depend on
# it) and times it against batchfetch and curl on the 1 GiB file of bench/download-bench.py,
# served by a local nginx. Prints median wall time and peak RSS of 5 runs each.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --package-path bench/nio-probe >/dev/null
swift build -c release --product batchfetch >/dev/null
python3 - <<'PY'
import pathlib, shutil, statistics, sys
sys.path.insert(0, "bench")
bench = __import__("download-bench")
root = pathlib.Path(".").resolve()
nginx, base, prefix = bench.serve(1024, "nio-probe")
url = f"{base}/big.bin"
out = prefix / "out"
manifest = prefix / "m.yaml"
manifest.write_text(f"version: 1\noutput_dir: {out}\njobs:\n  - {{id: big, url: '{url}', size: {1 << 30}, segments: 1}}\n")
tools = {
    "nio-probe (AsyncHTTPClient, pwrite + sha256)": [str(root / "bench/nio-probe/.build/release/nio-probe"), url, str(out / "big.bin")],
    "batchfetch (URLSession)": [str(bench.BIN), "run", str(manifest), "--report", str(prefix / "r.json")],
    "curl -o": ["curl", "-s", "-o", str(out / "big.bin"), url],
}
try:
    print("| tool | wall (median of 5) | peak RSS |\n|---|---|---|")
    for name, command in tools.items():
        runs = [bench.measure(command, prefix, out) for _ in range(5)]
        print(f"| {name} | {statistics.median(r[0] for r in runs):.2f} s | {max(r[1] for r in runs):.0f} MiB |")
finally:
    nginx.kill()
    shutil.rmtree(prefix, ignore_errors=True)
PY
