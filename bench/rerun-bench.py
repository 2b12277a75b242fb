#!/usr/bin/env python3
"""The nightly rerun where every file is already there (not a test): two binaries, the same
files, alternating. Each binary fetches the files once into its own output directory, then
reruns it --runs times; the rerun's wall time and peak RSS are what the state store costs
(an older binary keeps the JSON cache, a newer one the SQLite store).

usage: bench/rerun-bench.py OLD NEW [--files N] [--runs R] [--transport nio|urlsession]
Serves bench/work/www/tiny (20,000 files of 4 KiB, made by bench/download-bench.py) with nginx;
--files takes the first N of them.
"""
import argparse
import os
import pathlib
import shutil
import statistics
import tempfile
import time

from benchlib import start_nginx, timed

parser = argparse.ArgumentParser()
parser.add_argument("old")
parser.add_argument("new")
parser.add_argument("--files", type=int, default=20000)
parser.add_argument("--runs", type=int, default=5)
parser.add_argument("--transport", default="nio")
args = parser.parse_args()
www = pathlib.Path(__file__).resolve().parent / "work" / "www"
if not (www / "tiny" / "f19999.bin").exists():
    raise SystemExit("run bench/download-bench.py once first: it generates bench/work/www")
prefix = pathlib.Path(tempfile.mkdtemp(prefix="bf-rerun-"))
nginx, port = start_nginx(www, prefix)
env = {**os.environ, "BATCHFETCH_TRANSPORT": args.transport}
os.environ.update(env)
try:
    manifests = {}
    for name in ("old", "new"):
        out = prefix / f"out-{name}"
        manifest = prefix / f"{name}.yaml"
        manifest.write_text(f"version: 1\noutput_dir: {out}\nconcurrency: 16\nper_host: 16\njobs:\n" + "".join(
            f"  - {{id: f{i}, url: 'http://127.0.0.1:{port}/tiny/f{i}.bin', dest: 'd{i % 200}/f{i}.bin', size: 4096}}\n"
            for i in range(args.files)))
        manifests[name] = manifest
    bins = {"old": args.old, "new": args.new}
    first = {name: timed([bins[name], "run", str(manifests[name]), "--progress", "none", "--durability", "none"]) for name in bins}
    results = {name: [] for name in bins}
    for _ in range(args.runs):
        for name in bins:
            results[name].append(timed([bins[name], "run", str(manifests[name]), "--progress", "none", "--durability", "none"]))
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.2f}, {args.files} files of 4 KiB, "
          f"{args.transport}, median of {args.runs} reruns")
    for name in bins:
        walls = [wall for wall, _ in results[name]]
        rss = [peak for _, peak in results[name]]
        state = sorted(p.name for p in (prefix / f"out-{name}").iterdir() if p.name.startswith(".batchfetch-state"))
        size = sum((prefix / f"out-{name}" / s).stat().st_size for s in state)
        print(f"{name:4} first run {first[name][0]:.2f} s; rerun median {statistics.median(walls):.2f} s "
              f"({', '.join(f'{w:.2f}' for w in walls)}), peak RSS median {statistics.median(rss):.0f} MiB; "
              f"state {', '.join(state)} {size / 1e6:.1f} MB")
finally:
    nginx.terminate()
    shutil.rmtree(prefix, ignore_errors=True)
