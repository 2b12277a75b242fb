#!/usr/bin/env python3
"""The content cache (not a test; issue 36): what a file costs from the cache against fetching
it from nginx on loopback, in one run of this script.

1. One file of --big-mib MiB (default 1024): `batchfetch run` fetching it from nginx (`--no-cache`),
   then published from a filled cache into a fresh output directory (the copy path this file
   system allows: ext4 has no reflinks, so `copy_file_range`), and `curl -o` of it from nginx
   for scale. Median of --runs.
2. --small files of 4 KiB (default 20,000) through a `jobs_from` list pinned by sha256: fetched
   from nginx, then published from the cache into a fresh output directory; nginx's access log
   must show no request for the second.

Writes bench/results/cache.md with the command that produced it.
usage: bench/cache-bench.py [--big-mib N] [--small N] [--runs N] [--bin PATH]
"""
import argparse
import hashlib
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from benchlib import start_nginx, timed

ROOT = pathlib.Path(__file__).resolve().parent.parent


def make_files(www: pathlib.Path, big_mib: int, small: int) -> tuple:
    """The big file and the small ones (made once), with their sha256s."""
    www.mkdir(parents=True, exist_ok=True)
    big = www / f"big-{big_mib}.bin"
    if not big.exists():
        with big.open("wb") as out:
            for _ in range(big_mib):
                out.write(os.urandom(1 << 20))
    digest = hashlib.sha256()
    with big.open("rb") as source:
        for block in iter(lambda: source.read(1 << 24), b""):
            digest.update(block)
    smalls = []
    for index in range(small):
        path = www / "small" / f"d{index % 100:02d}" / f"s{index:06d}.bin"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(index.to_bytes(8, "big") * 512)
        smalls.append((path.relative_to(www).as_posix(), hashlib.sha256(path.read_bytes()).hexdigest()))
    return big.name, digest.hexdigest(), smalls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big-mib", type=int, default=1024)
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bin", default=str(ROOT / ".build/release/batchfetch"))
    args = parser.parse_args()
    binary = args.bin
    lines = ["# The content cache: from the cache against from nginx on loopback", "",
             f"`bench/cache-bench.py --big-mib {args.big_mib} --small {args.small} --runs {args.runs}` on a release build, "
             f"2 cores, {subprocess.run(['stat', '-f', '-c', '%T', str(ROOT)], capture_output=True, text=True).stdout.strip()} "
             f"(no reflinks: the cache copies with copy_file_range); load when it started: {os.getloadavg()[0]:.2f} "
             f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}).", ""]
    www = ROOT / "bench" / "work" / "cache"
    big, big_sha, smalls = make_files(www, args.big_mib, args.small)
    with tempfile.TemporaryDirectory(prefix="bf-cache-", dir=str(ROOT / "bench" / "work")) as tmp:
        tmp = pathlib.Path(tmp)
        prefix = tmp / "nginx"
        nginx, port = start_nginx(www, prefix, locations=f"access_log {prefix}/access.log;")
        try:
            cache = tmp / "cache"
            (tmp / "big.yaml").write_text(
                f"version: 1\noutput_dir: out\njobs:\n  - {{id: big, url: 'http://127.0.0.1:{port}/{big}', "
                f"checksum: 'sha256:{big_sha}'}}\n")
            with (tmp / "small.csv").open("w") as out:
                out.write("url,sha256\n")
                for path, sha in smalls:
                    out.write(f"http://127.0.0.1:{port}/{path},{sha}\n")
            (tmp / "small.yaml").write_text("version: 1\noutput_dir: out\nconcurrency: 16\nper_host: 16\njobs_from: [small.csv]\n")
            for name in ["big", "small"]:
                (tmp / f"{name}-link.yaml").write_text((tmp / f"{name}.yaml").read_text().replace("version: 1\n", "version: 1\ncache_link: hardlink\n"))

            runs = iter(range(1_000_000))

            def run(manifest: str, cache_arguments: list) -> tuple:
                # A fresh output directory each time, nothing deleted before it: ext4 skips the
                # inodes of files deleted in the last seconds when it makes new ones
                # (recently_deleted), which made every run after an `rm -rf` of 20,000 files
                # spend most of its time in the kernel's inode allocator, whatever it fetched.
                out = f"out{next(runs)}"
                (tmp / f"{out}.yaml").write_text((tmp / manifest).read_text().replace("output_dir: out", f"output_dir: {out}"))
                subprocess.run(["sync"], check=True)
                return timed([binary, "run", str(tmp / f"{out}.yaml"), "--progress", "none", "--transport", "nio"] + cache_arguments)

            def requests() -> int:
                return sum(1 for _ in (prefix / "access.log").open())

            lines += [f"## One file of {args.big_mib} MiB (median of {args.runs})", "",
                      "| how | wall | peak RSS | ratio to nginx |", "|---|---|---|---|"]
            network = [run("big.yaml", ["--no-cache"]) for _ in range(args.runs)]
            run("big.yaml", ["--cache", str(cache)])  # fills the cache
            cached = [run("big.yaml", ["--cache", str(cache)]) for _ in range(args.runs)]
            linked = [run("big-link.yaml", ["--cache", str(cache)]) for _ in range(args.runs)]
            curl = []
            for _ in range(args.runs):
                start = time.perf_counter()
                subprocess.run(["curl", "-s", "-o", str(tmp / "curl.bin"), f"http://127.0.0.1:{port}/{big}"], check=True)
                curl.append(time.perf_counter() - start)
            net = statistics.median(r[0] for r in network)
            for label, results in [("from nginx (`--no-cache`)", network), ("from the cache (copy_file_range)", cached),
                                   ("from the cache, `cache_link: hardlink`", linked)]:
                wall = statistics.median(r[0] for r in results)
                lines.append(f"| {label} | {wall:.2f} s | {max(r[1] for r in results):.0f} MiB | {wall / net:.2f}× |")
            lines.append(f"| curl -o from nginx | {statistics.median(curl):.2f} s | | {statistics.median(curl) / net:.2f}× |")
            print("\n".join(lines), flush=True)

            lines += ["", f"## {args.small:,} files of 4 KiB (`jobs_from`, pinned by sha256, concurrency 16; median of {args.runs})", "",
                      "| how | wall | peak RSS | requests at nginx | speed-up |", "|---|---|---|---|---|"]
            (prefix / "access.log").write_text("")
            subprocess.run(["kill", "-USR1", str(nginx.pid)], check=True)
            time.sleep(0.5)
            small_network = [run("small.yaml", ["--no-cache"]) for _ in range(args.runs)]
            network_requests = requests() // args.runs
            run("small.yaml", ["--cache", str(cache)])  # fills the cache
            (prefix / "access.log").write_text("")
            subprocess.run(["kill", "-USR1", str(nginx.pid)], check=True)
            time.sleep(0.5)
            small_cached = [run("small.yaml", ["--cache", str(cache)]) for _ in range(args.runs)]
            small_linked = [run("small-link.yaml", ["--cache", str(cache)]) for _ in range(args.runs)]
            cached_requests = requests()
            small_net = statistics.median(r[0] for r in small_network)
            small_cache = statistics.median(r[0] for r in small_cached)
            lines.append(f"| from nginx (`--no-cache`) | {small_net:.2f} s | {max(r[1] for r in small_network):.0f} MiB | "
                         f"{network_requests:,} per run | 1× |")
            lines.append(f"| from the cache | {small_cache:.2f} s | {max(r[1] for r in small_cached):.0f} MiB | "
                         f"{cached_requests:,} in {2 * args.runs} runs | {small_net / small_cache:.2f}× |")
            small_link = statistics.median(r[0] for r in small_linked)
            lines.append(f"| from the cache, `cache_link: hardlink` | {small_link:.2f} s | {max(r[1] for r in small_linked):.0f} MiB | "
                         f"(with the row above) | {small_net / small_link:.2f}× |")
        finally:
            nginx.terminate()
            nginx.wait()
    lines.append("")
    text = "\n".join(lines)
    print(text)
    (ROOT / "bench" / "results" / "cache.md").write_text(text)


if __name__ == "__main__":
    main()
