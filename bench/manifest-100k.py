#!/usr/bin/env python3
"""Manifest-scale benchmark (not a test): 100,000 jobs with dependencies and mirrors.

Generates the manifest, then runs `batchfetch validate` and `batchfetch plan --format json` on a
release build several times, printing the median wall time and peak RSS of each. Targets
(Docs/Contracts.md section 6): at most 2 s and 300 MiB each.

usage: bench/manifest-100k.py [--jobs N] [--runs N] [--bin PATH]
"""
import argparse
import os
import pathlib
import statistics
import tempfile

import benchlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def write_manifest(path: pathlib.Path, jobs: int) -> None:
    lines = [
        "version: 1",
        "output_dir: data",
        "concurrency: 8",
        "defaults:",
        "  retries: 3",
        "  timeout: 30s",
        "  headers: {User-Agent: batchfetch-bench/1}",
        "jobs:",
    ]
    for i in range(jobs):
        lines.append(f"  - id: part-{i:06d}")
        lines.append("    urls:")
        lines.append(f"      - https://mirror-a.example.org/ds/shard-{i:06d}.bin")
        lines.append(f"      - https://mirror-b.example.org/ds/shard-{i:06d}.bin")
        lines.append(f"    dest: shards/{i // 1000:03d}/shard-{i:06d}.bin")
        lines.append(f"    size: {65536 + i}")
        lines.append(f"    checksum: sha256:{i:064x}")
        if i % 100 != 0:
            lines.append(f"    depends_on: [part-{i - 1:06d}]")
        elif i > 0:
            lines.append(f"    depends_on: [part-{i - 100:06d}, part-{i - 37:06d}]")
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bin", default=str(ROOT / ".build/release/batchfetch"))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        manifest = pathlib.Path(tmp) / "bench.yaml"
        write_manifest(manifest, args.jobs)
        size_mib = manifest.stat().st_size / 1048576
        rows = []
        for label, command in [
            ("validate", [args.bin, "validate", str(manifest)]),
            ("plan --format json", [args.bin, "plan", "--format", "json", str(manifest)]),
        ]:
            results = [benchlib.timed(command) for _ in range(args.runs)]
            wall = statistics.median(r[0] for r in results)
            rss = max(r[1] for r in results)
            verdict = "ok" if wall <= 2.0 and rss <= 300 else "OVER TARGET"
            rows.append(f"| {label} | {wall:.2f} s | {rss:.0f} MiB | {verdict} |")

    report = "\n".join([
        f"Manifest benchmark: {args.jobs} jobs ({size_mib:.1f} MiB of YAML), median of {args.runs} runs, "
        f"{os.cpu_count()} cores",
        "",
        "| command | wall (median) | peak RSS (max) | target ≤ 2 s, ≤ 300 MiB |",
        "|---|---|---|---|",
        *rows,
    ])
    print(report)
    out = ROOT / "bench/results/manifest-100k.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report + "\n")
    print(f"\nwritten to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
