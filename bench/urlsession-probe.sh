#!/usr/bin/env bash
# Builds bench/urlsession-probe (bare URLSession: one session, a data-task delegate that writes
# each body to its file and nothing else; a separate package) and times it against batchfetch on
# both transports and curl, on the data of bench/download-bench.py served by a local nginx: one
# 1 GiB file, and 20,000 files of 4 KiB at concurrency 8 and 32. The probe's time is URLSession's
# floor on this machine: what batchfetch's default transport cannot go below, whatever the
# engine does. For the small files bench/nio-probe (bare AsyncHTTPClient, each body written to
# its file on the event loop as curl writes it) is the nio transport's floor the same way, and
# `nio-probe --publish` that floor with what batchfetch guarantees a small file (an unnamed file
# linked into place once complete, its sha256, one syncfs at the end): the rest of batchfetch's
# time is its engine's. The small-file scenarios also run for 2,000 files of 64 KiB (nio only).
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
def batch(folder, count):
    """The URLs of a small-file batch and a curl config that writes them to `out`."""
    urls = [f"{base}/{folder}/f{i}.bin" for i in range(count)]
    config = prefix / f"curl-{folder}.cfg"
    config.write_text("".join(f'url = "{url}"\noutput = "{out}/f{i}.bin"\n' for i, url in enumerate(urls)))
    return urls, str(config)
def small_rows(urls, manifest, config, concurrency):
    """The nio rows of a small-file scenario: the bare probe, the probe publishing as batchfetch
    does, batchfetch, and curl without and with the syncfs batchfetch's default durability makes."""
    return {
        "nio-probe": [nio_probe, str(concurrency), str(out)] + urls,
        "nio-probe --publish": [nio_probe, "--publish", str(concurrency), str(out)] + urls,
        "batchfetch nio": ["env", "BATCHFETCH_TRANSPORT=nio", str(bench.BIN), "run", manifest, "--report", str(prefix / "r.json")],
        "curl --parallel": ["curl", "-s", "--parallel", "--parallel-max", str(concurrency), "-K", config],
        "curl --parallel && sync": ["sh", "-c", f"curl -s --parallel --parallel-max {concurrency} -K '{config}' && sync"]}
tiny, tiny_config = batch("tiny", 20000)
small, small_config = batch("small", 2000)
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
        **small_rows(tiny, manifest, tiny_config, concurrency)}
for concurrency in (8, 32):
    manifest = bench.tools_for("many", base, out, prefix, 1024)["batchfetch" if concurrency == 8 else "batchfetch concurrency 32"][2]
    scenarios[f"2,000 files of 64 KiB, {concurrency} at a time"] = small_rows(small, manifest, small_config, concurrency)
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
