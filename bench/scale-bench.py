#!/usr/bin/env python3
"""ImageNet on one machine (not a test; issue 35): job lists, the state store and reports at
a million files.

1. `validate` of a 1,000,000-row csv list (url, size, sha256) and of a 1,000,000-job YAML
   manifest (bench/shard-bench.py's): wall time and peak RSS, median of --runs.
2. --files files of 1 KiB (default 1,280,000, ImageNet's count) in 200 directories, served by
   nginx on loopback, fetched through a `jobs_from` csv list (concurrency 16, per_host 16), per
   transport: the first run (files/s, peak RSS), the rerun with everything up to date, the
   report's size; then a run killed with SIGKILL part-way and its rerun, whose requests in
   nginx's access log must be exactly the files that were not published when it died.

Needs GNU time (`/usr/bin/time`) and nginx. The served files are made once under
bench/work/scale (about 5 GB of 4 KiB blocks for 1.28 M files). Writes bench/results/scale.md
with the command that produced it.
usage: bench/scale-bench.py [--files N] [--rows N] [--runs N] [--transports nio,urlsession] [--bin PATH]
"""
import argparse
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib
from benchlib import start_nginx, timed

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
shard_bench = __import__("shard-bench")


def make_files(www: pathlib.Path, count: int) -> None:
    """count files of 1 KiB in 200 directories, made once."""
    marker = www / f".made-{count}"
    if marker.exists():
        return
    for directory in range(200):
        (www / f"d{directory:03d}").mkdir(parents=True, exist_ok=True)
    for index in range(count):
        path = www / f"d{index % 200:03d}" / f"f{index:07d}.bin"
        if not path.exists():
            path.write_bytes(index.to_bytes(8, "big") * 128)
    marker.write_text("")


def write_list(path: pathlib.Path, port: int, count: int) -> None:
    with path.open("w") as out:
        out.write("url,size\n")
        for index in range(count):
            out.write(f"http://127.0.0.1:{port}/d{index % 200:03d}/f{index:07d}.bin,1024\n")


def published(out: pathlib.Path) -> int:
    """Files published under `out` (partials and the tool's own files not counted)."""
    found = subprocess.run(["find", str(out), "-type", "f", "-name", "f*.bin"], capture_output=True, text=True).stdout
    return sum(1 for line in found.splitlines() if line.endswith(".bin"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1_280_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--transports", default="nio,urlsession")
    parser.add_argument("--kill-transports", default="nio", help="transports of the kill -9 check (it is the store's, not the transport's)")
    parser.add_argument("--rerun-files", type=int, default=200_000, help="the issue's 200,000-file rerun")
    parser.add_argument("--bin", default=str(ROOT / ".build/release/batchfetch"))
    parser.add_argument("--skip-validate", action="store_true")
    args = parser.parse_args()
    binary = args.bin
    lines = [
        "# Scale: job lists, the state store and reports at a million files", "",
        f"`bench/scale-bench.py --files {args.files} --rows {args.rows} --runs {args.runs} --transports {args.transports}` "
        f"on a release build, 2 cores; load when it started: {os.getloadavg()[0]:.2f} "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}).", ""]

    with tempfile.TemporaryDirectory(prefix="bf-scale-") as tmp:
        tmp = pathlib.Path(tmp)
        if not args.skip_validate:
            csv = tmp / "rows.csv"
            with csv.open("w") as out:
                out.write("url,size,sha256\n")
                for index in range(args.rows):
                    out.write(f"https://mirror.example.org/ds/n{index // 1000:04d}/part-{index:07d}.jpg,{1000 + index % 99000},"
                              f"{index:064x}\n")
            (tmp / "list.yaml").write_text("version: 1\noutput_dir: data\njobs_from: [rows.csv]\n")
            yaml = tmp / "million.yaml"
            shard_bench.synthetic_manifest(yaml, args.rows)
            subprocess.run(["sync"], check=True)
            lines += ["## validate", "",
                      "| input | size | wall (median) | peak RSS (max) | per job | goal |", "|---|---|---|---|---|---|"]
            for label, manifest, source, goal in [(f"{args.rows:,}-row csv list", tmp / "list.yaml", csv, "≤ 4 s, ≤ 400 MiB"),
                                                 (f"{args.rows:,}-job YAML manifest", yaml, yaml, "≤ 5 s, ≤ 800 MiB")]:
                results = [timed([binary, "validate", str(manifest)]) for _ in range(args.runs)]
                wall = statistics.median(r[0] for r in results)
                rss = max(r[1] for r in results)
                lines.append(f"| {label} | {source.stat().st_size / 1048576:.0f} MiB | {wall:.2f} s | {rss:.0f} MiB | "
                             f"{rss * 1048576 / args.rows:.0f} B | {goal} |")
            csv.unlink()
            yaml.unlink()
            lines.append("")
            print("\n".join(lines), flush=True)

        www = ROOT / "bench" / "work" / "scale"
        make_files(www, args.files)
        prefix = tmp / "nginx"
        nginx, port = start_nginx(www, prefix, locations=f"access_log {prefix}/access.log;")
        try:
            write_list(tmp / "files.csv", port, args.files)
            write_list(tmp / "rerun.csv", port, min(args.rerun_files, args.files))
            lines += [f"## {args.files:,} files of 1 KiB from nginx on loopback (`jobs_from` csv, concurrency 16)", "",
                      "| transport | first run | files/s | peak RSS | rerun, all up to date | peak RSS | report | "
                      "rerun with `--report-jobs changed` | its report | state store |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            kills, reruns = [], []
            for transport in args.transports.split(","):
                out = tmp / f"out-{transport}"
                manifest = tmp / f"{transport}.yaml"
                manifest.write_text(f"version: 1\noutput_dir: {out}\nconcurrency: 16\nper_host: 16\n"
                                    f"jobs_from: [{tmp / 'files.csv'}]\n")
                command = [binary, "run", str(manifest), "--progress", "none", "--transport", transport]
                first = timed(command)
                rerun = timed(command)
                report = out / "batchfetch-report.json"
                full_report = report.stat().st_size
                changed = timed(command + ["--report-jobs", "changed"])
                store = sum(p.stat().st_size for p in out.glob(".batchfetch-state.sqlite*"))
                lines.append(f"| {transport} | {first[0]:.1f} s | {args.files / first[0]:,.0f} | {first[1]:.0f} MiB | "
                             f"{rerun[0]:.2f} s | {rerun[1]:.0f} MiB | {full_report / 1048576:.0f} MiB | "
                             f"{changed[0]:.2f} s, {changed[1]:.0f} MiB | {report.stat().st_size / 1024:.1f} KiB | "
                             f"{store / 1048576:.0f} MiB |")
                print(lines[-1], flush=True)
                subprocess.run(["rm", "-rf", str(out)], check=True)

                # The 200,000-file rerun.
                small = tmp / f"small-{transport}"
                (tmp / f"small-{transport}.yaml").write_text(f"version: 1\noutput_dir: {small}\nconcurrency: 16\nper_host: 16\n"
                                                            f"jobs_from: [{tmp / 'rerun.csv'}]\n")
                small_command = [binary, "run", str(tmp / f"small-{transport}.yaml"), "--progress", "none", "--transport", transport]
                small_first = timed(small_command)
                small_reruns = [timed(small_command) for _ in range(args.runs)]
                reruns.append(f"| {transport} | {small_first[0]:.1f} s | {statistics.median(r[0] for r in small_reruns):.2f} s | "
                              f"{max(r[1] for r in small_reruns):.0f} MiB |")
                print(reruns[-1], flush=True)
                subprocess.run(["rm", "-rf", str(small)], check=True)
                if transport not in args.kill_transports.split(","):
                    continue

                # Killed part-way: the rerun asks for exactly what was not published.
                subprocess.run(["rm", "-rf", str(out)], check=True)
                process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(first[0] * 0.4)
                process.send_signal(signal.SIGKILL)
                process.wait()
                done = published(out)
                (prefix / "access.log").write_text("")
                subprocess.run(["kill", "-USR1", str(nginx.pid)], check=True)  # reopen the log
                time.sleep(0.5)
                timed(command)
                requests = sum(1 for _ in (prefix / "access.log").open())
                kills.append(f"| {transport} | {done:,} | {args.files - done:,} | {requests:,} | "
                             f"{'ok' if requests == args.files - done else 'RE-FETCHED ' + str(requests - (args.files - done))} |")
                print(kills[-1], flush=True)
                subprocess.run(["rm", "-rf", str(out)], check=True)
            lines += ["", f"### {min(args.rerun_files, args.files):,} files: the rerun with everything up to date (median of {args.runs})", "",
                      "| transport | first run | rerun | peak RSS |", "|---|---|---|---|"] + reruns
            lines += ["", "### kill -9 at 40% of the first run's time, then a rerun", "",
                      "| transport | published when killed | not published | rerun's requests (access log) | verdict |",
                      "|---|---|---|---|---|"] + kills
        finally:
            nginx.terminate()
            nginx.wait()
    lines.append("")
    text = "\n".join(lines)
    print(text)
    (ROOT / "bench" / "results" / "scale.md").write_text(text)


if __name__ == "__main__":
    main()
