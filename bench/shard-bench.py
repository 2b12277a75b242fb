#!/usr/bin/env python3
"""Sharding at scale (not a test; issue: million-job manifests on many machines).

1. A 1,000,000-job manifest (sizes, sha256, a dependency every 50 jobs, 1,000 files per
   directory): wall time and peak RSS of `validate`, `plan --shard 3/16 --format json` and
   `plan --shards 16` on a release build (median of --runs).
   Needs GNU time (`/usr/bin/time`) for peak RSS.
2. Stability of the assignment (100,000 jobs, 16 shards): how many jobs change shard when one
   job is added, one removed, or the manifest's order is shuffled.
3. A shard's up-to-date rerun (20,000 local files, shard 0/4, the state cache warm): syscalls per
   job counted by `strace -c -f`, and the shard's peak RSS beside the whole manifest's.

Writes bench/results/shards.md with the command that produced it.
usage: bench/shard-bench.py [--jobs N] [--runs N] [--bin PATH]
"""
import argparse
import hashlib
import json
import os
import pathlib
import random
import statistics
import subprocess
import tempfile

import benchlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def job_lines(index: int, size: int, digest: str, url: str, dependency: bool) -> list:
    lines = [f"  - id: part-{index:07d}", f"    url: {url}", f"    dest: d{index // 1000:04d}/part-{index:07d}.bin",
             f"    size: {size}", f"    checksum: sha256:{digest}"]
    if dependency:
        lines.append(f"    depends_on: [part-{index - 1:07d}]")
    return lines


def synthetic_manifest(path: pathlib.Path, jobs: int, order=None, extra=None) -> None:
    random.seed(1)
    sizes = [int(random.lognormvariate(16, 1.5)) + 1 for _ in range(jobs)]
    lines = ["version: 1", "output_dir: data", "concurrency: 8", "defaults: {retries: 3}", "jobs:"]
    for index in (order if order is not None else range(jobs)):
        lines += job_lines(index, sizes[index], f"{index:064x}", f"https://mirror.example.org/ds/part-{index:07d}.bin",
                           index % 50 == 49)
    if extra is not None:
        lines += job_lines(jobs, 5_000_000, f"{jobs:064x}", "https://mirror.example.org/ds/new.bin", False)
    path.write_text("\n".join(lines) + "\n")


def shard_ids(binary: str, manifest: pathlib.Path, count: int) -> dict:
    """Each job id's shard, from `plan --shard K/N --format json`."""
    shard_of = {}
    for index in range(count):
        out = subprocess.run([binary, "plan", str(manifest), "--shard", f"{index}/{count}", "--format", "json"],
                             check=True, capture_output=True).stdout
        for step in json.loads(out)["order"]:
            shard_of[step["id"]] = index
    return shard_of


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bin", default=str(ROOT / ".build/release/batchfetch"))
    args = parser.parse_args()
    rows, notes = [], []
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        # 1. Scale
        manifest = tmp / "million.yaml"
        synthetic_manifest(manifest, args.jobs)
        # Write the 205 MiB back now: the kernel's writeback of the fresh file during the first
        # command's runs cost them about 2 s each.
        subprocess.run(["sync"], check=True)
        size_mib = manifest.stat().st_size / 1048576
        for label, command in [
            ("validate", [args.bin, "validate", str(manifest)]),
            ("plan --shard 3/16 --format json", [args.bin, "plan", str(manifest), "--shard", "3/16", "--format", "json"]),
            ("plan --shards 16", [args.bin, "plan", str(manifest), "--shards", "16"]),
        ]:
            results = [benchlib.timed(command) for _ in range(args.runs)]
            wall = statistics.median(r[0] for r in results)
            rss = max(r[1] for r in results)
            verdict = "ok" if wall <= 10 and rss <= 1536 else "OVER TARGET"
            rows.append(f"| {label} | {wall:.2f} s | {rss:.0f} MiB | {verdict} |")
        balance = subprocess.run([args.bin, "plan", str(manifest), "--shards", "16"], capture_output=True, text=True).stdout
        manifest.unlink()

        # 2. Stability, at 100,000 jobs
        jobs = 100_000
        base, added, removed, shuffled = (tmp / f"{name}.yaml" for name in ["base", "added", "removed", "shuffled"])
        synthetic_manifest(base, jobs)
        synthetic_manifest(added, jobs, extra=True)
        synthetic_manifest(removed, jobs, order=[i for i in range(jobs) if i != 12345])
        order = list(range(jobs))
        random.Random(2).shuffle(order)
        synthetic_manifest(shuffled, jobs, order=order)
        before = shard_ids(args.bin, base, 16)
        moves = {}
        for label, path in [("one job added", added), ("one job removed", removed), ("order shuffled", shuffled)]:
            after = shard_ids(args.bin, path, 16)
            moves[label] = sum(1 for job, shard in before.items() if job in after and after[job] != shard)

        # 3. The up-to-date rerun of one shard
        local = tmp / "local"
        data = local / "data"
        files = 20_000
        lines = ["version: 1", "output_dir: data", "jobs:"]
        for index in range(files):
            content = index.to_bytes(4, "big") * 256
            target = data / f"d{index // 1000:04d}" / f"part-{index:07d}.bin"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            lines += job_lines(index, len(content), hashlib.sha256(content).hexdigest(), f"http://127.0.0.1:9/part-{index:07d}.bin",
                               index % 50 == 49)
        (local / "m.yaml").write_text("\n".join(lines) + "\n")
        shard = [args.bin, "run", str(local / "m.yaml"), "--shard", "0/4", "--progress", "none", "--durability", "none"]
        subprocess.run(shard, check=True, capture_output=True)  # hashes every file once, fills the shard's state cache
        strace_out = local / "strace.txt"
        subprocess.run(["strace", "-f", "-c", "-o", str(strace_out)] + shard, check=True, capture_output=True)
        report = json.loads((data / "batchfetch-report.shard-0-of-4.json").read_text())
        shard_jobs = report["summary"]["jobs"]
        assert report["summary"]["up_to_date"] == shard_jobs, report["summary"]
        calls = {}
        for line in strace_out.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 5 and fields[-1].isidentifier() and fields[3].isdigit():
                calls[fields[-1]] = int(fields[3])
        stat_calls = sum(calls.get(name, 0) for name in ["newfstatat", "statx", "lstat", "stat", "fstat"])
        shard_wall, shard_rss = benchlib.timed(shard)
        whole_wall, whole_rss = benchlib.timed([args.bin, "run", str(local / "m.yaml"), "--progress", "none", "--durability", "none"])

    command = f"bench/shard-bench.py --jobs {args.jobs} --runs {args.runs}"
    text = "\n".join([
        "# Sharding at scale",
        "",
        f"`{command}` on a release build, {os.cpu_count()} cores; load when it ran: `{uptime}`.",
        "",
        f"## {args.jobs:,} jobs ({size_mib:.0f} MiB of YAML), median of {args.runs} runs",
        "",
        "| command | wall (median) | peak RSS (max) | target ≤ 10 s, ≤ 1.5 GiB |",
        "|---|---|---|---|",
        *rows,
        "",
        "`plan --shards 16` (sizes log-normal, a dependency every 50 jobs):",
        "",
        "```",
        balance.rstrip(),
        "```",
        "",
        f"## Stability: jobs that change shard ({jobs:,} jobs, 16 shards)",
        "",
        "| change | jobs moved |",
        "|---|---|",
        *[f"| {label} | {count} of {jobs:,} |" for label, count in moves.items()],
        "",
        "Sorting components into the lightest shard (LPT) moves most jobs on any change; the rule in",
        "`ShardAssignment` moves only components whose own shard sequence meets a shard that filled",
        "differently.",
        "",
        f"## Up-to-date rerun of shard 0/4 ({files:,} local files, {shard_jobs:,} in the shard, state cache warm)",
        "",
        "| | count | per job of the shard |",
        "|---|---|---|",
        f"| stat calls (newfstatat, statx, fstat, …) | {stat_calls} | {stat_calls / shard_jobs:.2f} |",
        f"| openat | {calls.get('openat', 0)} | {calls.get('openat', 0) / shard_jobs:.2f} |",
        f"| read | {calls.get('read', 0)} | {calls.get('read', 0) / shard_jobs:.2f} |",
        "",
        f"Wall and peak RSS: shard 0/4 {shard_wall:.2f} s, {shard_rss:.0f} MiB; the whole manifest {whole_wall:.2f} s, "
        f"{whole_rss:.0f} MiB.",
        "",
        "All syscalls of the shard's rerun (strace -c -f, top 12 by count):",
        "",
        "```",
        *[f"{count:>8}  {name}" for name, count in sorted(calls.items(), key=lambda item: -item[1])[:12]],
        "```",
    ])
    print(text)
    out = ROOT / "bench/results/shards.md"
    out.write_text(text + "\n")
    print(f"\nwritten to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
