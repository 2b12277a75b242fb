#!/usr/bin/env python3
"""Upload benchmark (not a test): batchfetch PUT against `curl -T`, in one run.

Starts nginx on a free loopback port with a WebDAV location (`dav_methods PUT`), generates one
file of --size-mib MiB (2 GiB by default), and measures, --runs times each:
  curl -T                   the peer: reads and sends, verifies nothing
  batchfetch (cold)         no state cache: hashes the file once (sha256 for Content-Digest),
                            then sends it while hashing what leaves; `refresh: always`
  batchfetch (warm)         the digest from the state cache (as after the download that verified
                            the file), so one read; `refresh: always`
on the default transport and on nio (uploads use AsyncHTTPClient on both). The stored file is
compared with the source after each batchfetch run. The table shows the median wall time and
the highest peak RSS (GNU time); uploads stream from disk, so peak RSS must stay within the
64 MiB bound of downloads whatever the file's size.

usage: bench/upload-bench.py [--runs N] [--size-mib N]
Writes bench/results/uploads.md.
"""
import argparse
import filecmp
import os
import pathlib
import shutil
import statistics
import subprocess
import sys

import benchlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work" / "upload"
BIN = ROOT / ".build" / "release" / "batchfetch"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size-mib", type=int, default=2048)
    args = parser.parse_args()
    if not BIN.exists():
        sys.exit("build first: swift build -c release --product batchfetch")
    if not shutil.which("curl"):
        sys.exit("curl not found (make bench installs it)")
    data = WORK / "data"
    data.mkdir(parents=True, exist_ok=True)
    source = data / "big.bin"
    if not source.exists() or source.stat().st_size != args.size_mib << 20:
        with open(source, "wb") as f:
            for _ in range(args.size_mib):
                f.write(os.urandom(1 << 20))
    www = WORK / "www"
    shutil.rmtree(www, ignore_errors=True)
    (www / "dav").mkdir(parents=True)
    nginx, port = benchlib.start_nginx(www, WORK / "nginx", locations=(
        "location /dav/ { dav_methods PUT; create_full_put_path on; client_max_body_size 0; }"))
    url = f"http://127.0.0.1:{port}/dav/big.bin"
    stored = www / "dav" / "big.bin"
    manifest = WORK / "upload.yaml"
    manifest.write_text(f"version: 1\noutput_dir: data\njobs:\n  - {{id: push, upload: big.bin, url: \"{url}\", refresh: always}}\n")
    state = data / ".batchfetch-state.sqlite"
    try:
        def batchfetch(transport: str, warm: bool) -> list[str]:
            if not warm:
                for suffix in ("", "-wal", "-shm"):
                    state.with_name(state.name + suffix).unlink(missing_ok=True)
            return ["env", f"BATCHFETCH_TRANSPORT={transport}", str(BIN), "run", str(manifest), "--progress", "none"]

        tools = {
            "curl -T": lambda: ["curl", "-sf", "-T", str(source), url],
            "batchfetch (cold, hashes first)": lambda: batchfetch("urlsession", False),
            "batchfetch (warm, digest cached)": lambda: batchfetch("urlsession", True),
            "batchfetch nio (cold)": lambda: batchfetch("nio", False),
            "batchfetch nio (warm)": lambda: batchfetch("nio", True),
        }
        results = {}
        for name, command in tools.items():
            walls, peaks = [], []
            for _ in range(args.runs):
                stored.unlink(missing_ok=True)
                subprocess.run(["sync"])
                wall, rss = benchlib.timed(command())
                if not filecmp.cmp(source, stored, shallow=False):
                    sys.exit(f"{name}: the stored file differs from the source")
                walls.append(wall)
                peaks.append(rss)
            results[name] = (statistics.median(walls), max(peaks))
            print(f"{name}: {results[name][0]:.2f} s, {results[name][1]:.0f} MiB", flush=True)
    finally:
        nginx.kill()
    curl = results["curl -T"][0]
    lines = [f"# Uploads: {args.size_mib} MiB PUT to nginx WebDAV on loopback", "",
             f"Median of {args.runs} runs (`bench/upload-bench.py --runs {args.runs} --size-mib {args.size_mib}`); "
             "peak RSS is the highest of the runs. curl verifies nothing; batchfetch sends Content-Digest "
             "and hashes what leaves.", "",
             "| tool | wall | peak RSS | curl ÷ tool |", "|---|---|---|---|"]
    for name, (wall, rss) in results.items():
        lines.append(f"| {name} | {wall:.2f} s | {rss:.0f} MiB | {curl / wall:.2f}× |")
    text = "\n".join(lines) + "\n"
    print(text)
    (ROOT / "bench" / "results" / "uploads.md").write_text(text)


if __name__ == "__main__":
    main()
