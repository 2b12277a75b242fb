#!/usr/bin/env bash
# Builds bench/urlsession-probe (bare URLSession: one session, a data-task delegate that writes
# each body to its file and nothing else; a separate package) and times it against batchfetch on
# both transports and curl, on the data of bench/download-bench.py served by a local nginx: one
# 1 GiB file, and 20,000 files of 4 KiB at concurrency 8 and 32. The probe's time is URLSession's
# floor on this machine: what batchfetch's default transport cannot go below, whatever the
# engine does. For the small files bench/nio-probe (bare AsyncHTTPClient, each body written to
# its file on the event loop as curl writes it) is the nio transport's floor the same way.
# Prints median wall time and peak RSS of 3 runs each.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --package-path bench/urlsession-probe >/dev/null
swift build -c release --package-path bench/nio-probe >/dev/null
swift build -c release --product batchfetch >/dev/null
python3 - <<'PY'
import pathlib, shutil, statistics, subprocess, sys
sys.path.insert(0, "bench")
bench = __import__("download-bench")
root = pathlib.Path(".").resolve()
nginx, base, prefix = bench.serve(1024, "urlsession-probe")
out = prefix / "out"
probe = str(root / "bench/urlsession-probe/.build/release/urlsession-probe")
nio_probe = str(root / "bench/nio-probe/.build/release/nio-probe")
uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
print(f"`bench/urlsession-probe.sh`; load when it started: `{uptime}`.\n")
tiny = [f"{base}/tiny/f{i}.bin" for i in range(20000)]
curl_config = prefix / "curl.cfg"
curl_config.write_text("".join(f'url = "{url}"\noutput = "{out}/f{i}.bin"\n' for i, url in enumerate(tiny)))
scenarios = {"one 1 GiB file": {
    "urlsession-probe": [probe, "1", str(out), f"{base}/big.bin"],
    "batchfetch (URLSession)": [str(bench.BIN), "run", str(bench.tools_for("single", base, out, prefix, 1024)["batchfetch"][2]),
                                "--report", str(prefix / "r.json")],
    "curl -o": ["curl", "-s", "-o", str(out / "big.bin"), f"{base}/big.bin"]}}
for concurrency in (8, 32):
    manifest = bench.tools_for("tiny", base, out, prefix, 1024)["batchfetch" if concurrency == 8 else "batchfetch concurrency 32"][2]
    scenarios[f"20,000 files of 4 KiB, {concurrency} at a time"] = {
        "urlsession-probe": [probe, str(concurrency), str(out)] + tiny,
        "batchfetch (URLSession)": [str(bench.BIN), "run", manifest, "--report", str(prefix / "r.json")],
        "nio-probe": [nio_probe, str(concurrency), str(out)] + tiny,
        "batchfetch nio": ["env", "BATCHFETCH_TRANSPORT=nio", str(bench.BIN), "run", manifest, "--report", str(prefix / "r.json")],
        "curl --parallel": ["curl", "-s", "--parallel", "--parallel-max", str(concurrency), "-K", str(curl_config)]}
try:
    for scenario, tools in scenarios.items():
        print(f"### {scenario}\n\n| tool | wall (median of 3) | peak RSS |\n|---|---|---|")
        for name, command in tools.items():
            runs = [bench.measure(command, prefix, out) for _ in range(3)]
            print(f"| {name} | {statistics.median(r[0] for r in runs):.2f} s | {max(r[1] for r in runs):.0f} MiB |")
        print()
finally:
    nginx.kill()
    shutil.rmtree(prefix, ignore_errors=True)
PY
