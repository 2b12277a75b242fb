#!/usr/bin/env python3
"""Unattended-run goals (issue 52), in one sitting against nginx on loopback:

1. `--bwlimit 20Mi` on a 256 MiB download: the average rate within ±5 % of the limit, and no
   one-second window above 1.25× it (read from the run's own progress events, every 0.25 s);
   beside it curl `--limit-rate 20M` and wget `--limit-rate=20m` (and aria2c
   `--max-overall-download-limit=20M` when installed), whose averages are measured the same way
   (wall time of the whole transfer).
2. Hooks add at most 5 ms beyond their own work: the median wall time of a one-file run with a
   `{command: [true]}` hook under each event against the same run with `--no-hooks`, less the
   median time of `true` itself.

usage: bench/window-bench.py BATCHFETCH [--size-mib 256] [--rate-mib 20] [--runs 15]
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import benchlib  # noqa: E402


def wall(command, cwd=None):
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("batchfetch")
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--rate-mib", type=int, default=20)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    binary = os.path.abspath(args.batchfetch)
    limit = args.rate_mib << 20
    work = pathlib.Path(tempfile.mkdtemp(prefix="window-bench-"))
    root = work / "root"
    root.mkdir()
    with open(root / "big.bin", "wb") as out:
        for _ in range(args.size_mib):
            out.write(os.urandom(1 << 20))
    (root / "small.bin").write_bytes(os.urandom(1000))
    nginx, port = benchlib.start_nginx(root, work / "nginx")
    base = f"http://127.0.0.1:{port}"
    try:
        print(f"## --bwlimit {args.rate_mib}Mi, {args.size_mib} MiB, nginx on loopback\n")
        print("| tool | seconds | average MiB/s | average / limit | busiest second / limit |")
        print("|---|---|---|---|---|")
        run = work / "run"
        run.mkdir()
        (run / "m.yaml").write_text(f"version: 1\noutput_dir: out\njobs:\n  - {{id: big, url: '{base}/big.bin'}}\n")
        seconds = wall([binary, "run", "m.yaml", "--bwlimit", f"{args.rate_mib}Mi", "--progress", "none",
                        "--events", "events.ndjson"], cwd=run)
        samples = []
        for line in (run / "events.ndjson").read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "progress":
                samples.append((event["time"], event["bytes_transferred"]))
        # Progress events carry RFC 3339 times with milliseconds; a window is four ticks.
        def seconds_of(stamp):
            return time.mktime(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + float("0." + stamp[20:23])
        points = [(seconds_of(t), b) for t, b in samples]
        busiest = 0.0
        for i, (t0, b0) in enumerate(points):
            for t1, b1 in points[i + 1:]:
                if t1 - t0 >= 0.999:
                    busiest = max(busiest, (b1 - b0) / (t1 - t0))
                    break
        size = args.size_mib << 20
        average = size / seconds
        print(f"| batchfetch | {seconds:.2f} | {average / 2**20:.2f} | {average / limit:.3f} | {busiest / limit:.3f} |")
        peers = [("curl", ["curl", "-s", "-o", str(work / "curl.bin"), "--limit-rate", f"{args.rate_mib}M", f"{base}/big.bin"]),
                 ("wget", ["wget", "-q", "-O", str(work / "wget.bin"), f"--limit-rate={args.rate_mib}m", f"{base}/big.bin"])]
        if shutil.which("aria2c"):
            peers.append(("aria2c", ["aria2c", "-q", "-d", str(work), "-o", "aria2.bin", "--allow-overwrite=true",
                                     f"--max-overall-download-limit={args.rate_mib}M", f"{base}/big.bin"]))
        for name, command in peers:
            seconds = wall(command)
            average = size / seconds
            print(f"| {name} | {seconds:.2f} | {average / 2**20:.2f} | {average / limit:.3f} | (not observable) |")

        print(f"\n## Hooks: a one-file run, median of {args.runs}\n")
        hooked = work / "hooked"
        hooked.mkdir()
        true = shutil.which("true")
        (hooked / "m.yaml").write_text(
            "version: 1\noutput_dir: out\nhooks:\n"
            + "".join(f"  {event}: [{{command: [{true}]}}]\n" for event in ["on_start", "on_success", "on_failure", "on_finish"])
            + f"jobs:\n  - {{id: s, url: '{base}/small.bin'}}\n")
        with_hooks, without, alone = [], [], []
        for _ in range(args.runs):
            shutil.rmtree(hooked / "out", ignore_errors=True)
            with_hooks.append(wall([binary, "run", "m.yaml", "--progress", "none"], cwd=hooked))
            shutil.rmtree(hooked / "out", ignore_errors=True)
            without.append(wall([binary, "run", "m.yaml", "--progress", "none", "--no-hooks"], cwd=hooked))
            alone.append(wall([true]))
        spent = statistics.median(with_hooks) - statistics.median(without)
        own = 3 * statistics.median(alone)  # on_start, on_success and on_finish fire
        print("| run | median ms |")
        print("|---|---|")
        print(f"| --no-hooks | {statistics.median(without) * 1000:.1f} |")
        print(f"| three `true` hooks | {statistics.median(with_hooks) * 1000:.1f} |")
        print(f"| `true` alone, ×3 | {own * 1000:.1f} |")
        print(f"| hooks beyond their own work | {(spent - own) * 1000:.1f} |")
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
