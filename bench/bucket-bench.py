#!/usr/bin/env python3
"""Bucket prefixes (not a test; issue 38): what a run of a prefix of --objects objects costs —
the listing's pages, then one signed download per object — and its peak RSS, against moto's S3
server behind the tests' verifying SigV4 proxy (Tests/Support/sigv4_proxy.py: every request's
signature recomputed with botocore), on loopback. `plan` (which only lists) is measured too.
The objects are small (moto is slow): the row shows the per-object floor and the memory a long
listing costs, not bandwidth.

Writes bench/results/buckets.md with the command that produced it.
usage: bench/bucket-bench.py [--objects N] [--runs N] [--bin PATH]
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from benchlib import free_port, timed, wait_listening

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "Tests" / "Support"
KEY, SECRET = "AKIABENCH", "bench+secret/x"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bin", default=str(ROOT / ".build/release/batchfetch"))
    args = parser.parse_args()
    moto_port, proxy_port = free_port(), free_port()
    moto = subprocess.Popen([sys.executable, str(SUPPORT / "s3_helper.py"), "serve", str(moto_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(moto_port)
    proxy = subprocess.Popen([sys.executable, str(SUPPORT / "sigv4_proxy.py"), str(proxy_port), f"http://127.0.0.1:{moto_port}", KEY, SECRET],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(proxy_port)
    endpoint = f"http://127.0.0.1:{proxy_port}"
    try:
        subprocess.run([sys.executable, str(SUPPORT / "s3_helper.py"), "put-many", endpoint, KEY, SECRET, "data", "many/", str(args.objects)],
                       check=True)
        environment = os.environ | {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET}
        rows = {"plan (lists the prefix)": [], "run (lists, then downloads every object)": [], "rerun (lists; every object up to date)": []}
        with tempfile.TemporaryDirectory(prefix="bf-bucket-", dir=str(ROOT / "bench" / "work")) as tmp:
            tmp = pathlib.Path(tmp)
            for run in range(args.runs):
                manifest = tmp / f"m{run}.yaml"
                manifest.write_text(f"version: 1\noutput_dir: out{run}\njobs:\n  - {{id: many, url: 's3://data/many/', dest: many/, "
                                    f"s3: {{endpoint: '{endpoint}'}}}}\n")
                os.environ.update(environment)
                rows["plan (lists the prefix)"].append(timed([args.bin, "plan", str(manifest)]))
                rows["run (lists, then downloads every object)"].append(timed([args.bin, "run", str(manifest), "--progress", "none"]))
                rows["rerun (lists; every object up to date)"].append(timed([args.bin, "run", str(manifest), "--progress", "none"]))
                files = len(os.listdir(tmp / f"out{run}" / "many"))
                if files != args.objects:
                    sys.exit(f"run {run}: {files} files, expected {args.objects}")
                shutil.rmtree(tmp / f"out{run}")
        lines = ["# Buckets: a prefix of many objects", "",
                 f"`bench/bucket-bench.py --objects {args.objects} --runs {args.runs}` on a release build, 2 cores; "
                 f"load when it started: {os.getloadavg()[0]:.2f} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
                 f"{args.objects:,} objects of about 11 bytes under one prefix in moto's S3 server, behind the tests' verifying "
                 "SigV4 proxy (both single Python processes: they, not batchfetch, set the pace).", "",
                 "| command | wall (median) | peak RSS (largest) |", "|---|---|---|"]
        for label, measured in rows.items():
            lines.append(f"| {label} | {statistics.median(r[0] for r in measured):.2f} s | {max(r[1] for r in measured):.0f} MiB |")
        lines += ["", "Goal (issue 38): a 1,000-object prefix plans and runs with every listing page read, peak RSS ≤ 64 MiB.", ""]
        text = "\n".join(lines)
        print(text)
        (ROOT / "bench" / "results" / "buckets.md").write_text(text)
    finally:
        proxy.kill()
        moto.kill()


if __name__ == "__main__":
    main()
