#!/usr/bin/env python3
"""Paired comparison of two batchfetch binaries (not a test): the same downloads, alternating,
on one nginx, durability none (so the disk's flush speed does not swamp the engine's cost).

usage: bench/compare-binaries.py OLD NEW [--runs N]
Needs bench/work/www, which bench/download-bench.py generates (1 GiB file and 2,000 x 64 KiB).
Example: build an older commit in a worktree, then
  bench/compare-binaries.py /tmp/old/.build/release/batchfetch .build/release/batchfetch
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import start_nginx

parser = argparse.ArgumentParser()
parser.add_argument("old")
parser.add_argument("new")
parser.add_argument("--runs", type=int, default=5)
args = parser.parse_args()
www = pathlib.Path(__file__).resolve().parent / "work" / "www"
if not (www / "big.bin").exists():
    sys.exit("run bench/download-bench.py once first: it generates bench/work/www")
prefix = pathlib.Path(tempfile.mkdtemp(prefix="bf-paired-"))
nginx, port = start_nginx(www, prefix)
base = f"http://127.0.0.1:{port}"
bins = {"old": args.old, "new": args.new}
out = prefix / "out"
m = prefix / "m.yaml"
m.write_text(f"version: 1\noutput_dir: {out}\njobs:\n  - {{id: big, url: '{base}/big.bin', size: {1 << 30}}}\n")
many = prefix / "many.yaml"
many.write_text(f"version: 1\noutput_dir: {out}\nconcurrency: 8\nper_host: 8\njobs:\n" + "".join(
    f"  - {{id: f{i}, url: '{base}/small/f{i}.bin', dest: f{i}.bin}}\n" for i in range(2000)))
results = {}
try:
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.2f}, median of {args.runs}")
    for run in range(args.runs):
        for transport in ["urlsession", "nio"]:
            for scenario, manifest in [("1GiB", m), ("2000x64KiB", many)]:
                for name, binary in bins.items():
                    subprocess.run(["rm", "-rf", str(out)]); subprocess.run(["sync"])
                    t = time.time()
                    subprocess.run([binary, "run", str(manifest), "--durability", "none", "--progress", "none", "--report", str(prefix / "r.json")],
                                   env={**os.environ, "BATCHFETCH_TRANSPORT": transport}, check=True, stderr=subprocess.DEVNULL)
                    results.setdefault((scenario, transport, name), []).append(time.time() - t)
    for (scenario, transport, name), times in sorted(results.items()):
        print(f"{scenario:12} {transport:10} {name}: median {statistics.median(times):.2f} s  ({', '.join(f'{x:.2f}' for x in times)})")
finally:
    nginx.terminate()
