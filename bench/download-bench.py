#!/usr/bin/env python3
"""Download benchmark (not a test): batchfetch against curl, wget and aria2c, in one run.

Starts nginx on a free loopback port serving generated data, then measures each tool on:
  single    one 1 GiB file, one connection (batchfetch verifies sha256 and publishes atomically),
            durability batch (a syncfs at the end) and none, against curl -o with and without sync
  many      2,000 files of 64 KiB, 8 and 32 at a time (batchfetch, curl --parallel with and without
            sync, aria2c -j, wget -i)
  tiny      20,000 files of 4 KiB, 8 and 32 at a time, the same tools
  segmented one 1 GiB file over 4 connections (batchfetch segments: 4 vs aria2c -x4 -s4)
  slowdisk  one 1 GiB file with the disk simulated at 200 MiB/s (BATCHFETCH_SIMULATED_DISK_RATE),
            single stream and 4 segments: peak RSS must stay at or below 64 MiB
  latency   2,000 files of 64 KiB from batchfetch-test-origin delaying every response head by
            20 ms (a network's round trip; this machine has no netem), at concurrency 8 and 32:
            throughput should stay near concurrency / latency (400 and 1,600 files/s); a curl run
            against the same origin without the delay shows the origin is not the bottleneck
  capped    one 1 GiB file from a mirror that caps each connection at 20 MB/s (nginx
            `limit_rate 20m`), the manifest giving no size: batchfetch with `segments: auto`
            (decided by the first answer's size) and `segments: 8`, against curl and aria2c
Each measurement sets the previous output aside (many files are deleted only at the end, see
`set_aside`) and runs `sync` first, so one run's deletions and writeback do not slow the next;
the table shows the median wall time of --runs runs and the highest peak RSS. The peers verify nothing.

usage: bench/download-bench.py [--runs N] [--scenarios single,many,tiny,segmented,slowdisk,capped,latency] [--size-mib N]
Results are printed as a markdown table and written to bench/results/downloads.md (the default
scenarios) or bench/results/downloads-<scenarios>.md.
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

import benchlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
BIN = ROOT / ".build" / "release" / "batchfetch"


def start_nginx(root: pathlib.Path, prefix: pathlib.Path) -> tuple[subprocess.Popen, int]:
    """nginx tuned for throughput (many requests per connection); `/capped/` serves the same
    files at 20 MB/s per connection, as many dataset mirrors do."""
    return benchlib.start_nginx(root, prefix, http_options="tcp_nopush on; keepalive_requests 100000;",
                                locations=f"location /capped/ {{ alias {root}/; limit_rate 20m; }}")


def generate(root: pathlib.Path, size_mib: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    big = root / "big.bin"
    if not big.exists() or big.stat().st_size != size_mib << 20:
        with open(big, "wb") as f:
            for _ in range(size_mib):
                f.write(os.urandom(1 << 20))
    for directory, count, size in [("small", 2000, 64 << 10), ("tiny", 20000, 4 << 10)]:
        folder = root / directory
        if not (folder / f"f{count - 1}.bin").exists():
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                (folder / f"f{i}.bin").write_bytes(os.urandom(size))


def serve(size_mib: int, name: str) -> tuple[subprocess.Popen, str, pathlib.Path]:
    """The benchmark's data (generated once) served by nginx: the server, its base URL and a
    fresh temporary directory `name`-* for outputs, manifests and nginx's files."""
    www = WORK / "www"
    generate(www, size_mib)
    prefix = pathlib.Path(tempfile.mkdtemp(prefix=f"{name}-"))
    nginx, port = start_nginx(www, prefix)
    return nginx, f"http://127.0.0.1:{port}", prefix


def set_aside(directory: pathlib.Path) -> None:
    """Moves `directory` out of the way, to be deleted when the benchmark ends (``main``).

    Deleting thousands of files just before a measured run slows that run's file creation, and by
    chance: ext4 passes over recently freed inodes when it allocates one, looking each up in the
    buffer cache (`recently_deleted` under `find_inode_bit` in perf), so a batchfetch run after
    20,000 deletions spent 10-15% of its CPU there (still 10% with the deletion 70 s earlier),
    while a curl run whose directory landed in another block group spent 0.2% (perf,
    2026-11-23). No run deletes many files, so no tool pays for another's; a
    directory of a few large files is deleted at once (keeping gigabytes would fill the disk)."""
    if not directory.exists():
        return
    with os.scandir(directory) as entries:
        few = sum(1 for _ in zip(range(100), entries)) < 100
    if few:
        shutil.rmtree(directory)
    else:
        graveyard = directory.parent / "graveyard"
        graveyard.mkdir(exist_ok=True)
        directory.rename(graveyard / f"{directory.name}-{time.monotonic_ns()}")


DROP_CACHES = pathlib.Path("/proc/sys/vm/drop_caches")


def settle_page_cache() -> None:
    """Empties the page cache (as root), then reads back what the runs need: the served data, and
    every tool's and server's binary and libraries (a `--version` each).

    Why: the benchmark keeps earlier runs' files until it ends, so without this each run's
    page cache takes memory the virtual machine has not touched before, and that first touch
    costs more run after run: `curl --parallel-max 32` used 0.13, 0.29 and 0.46 s of system time
    for the same 2,000 files in three consecutive runs, 0.13 s every time with this
    (bench/results/profile.md). Without root, nothing is dropped and rows that write many
    files vary by about 30%."""
    try:
        DROP_CACHES.write_text("1\n")
    except OSError:
        return
    for path in (WORK / "www").rglob("*"):
        if path.is_file():
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
    # Every tool and server, running or not: a running one's pages were dropped too.
    for tool in [str(BIN), str(TEST_ORIGIN), "curl", "wget", "aria2c", benchlib.nginx_binary()]:
        if shutil.which(tool) or pathlib.Path(tool).exists():
            subprocess.run([tool, "-v" if tool.endswith("nginx") else "--version"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(command: list[str], cwd: pathlib.Path, clean: pathlib.Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one run into an empty `clean` (the last run's set
    aside), after syncing and settling the page cache (``settle_page_cache``).

    Peak RSS comes from GNU time, as in ``benchlib.timed``: `wait4` from here counts the pages
    the child had from this Python process before its exec (Python starts it with `vfork`), so
    every tool read at least about 33 MiB — curl's 14 MiB among them."""
    set_aside(clean)
    clean.mkdir(parents=True)
    subprocess.run(["sync"])
    settle_page_cache()
    time.sleep(0.5)
    log = cwd / "stderr.log"
    peak = cwd / "peak-rss.txt"
    with open(log, "wb") as errors:
        start = time.perf_counter()
        process = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", str(peak)] + command, cwd=cwd,
                                   stdout=subprocess.DEVNULL, stderr=errors, env={**os.environ, **(env or {})})
        _, status, _ = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        kept = WORK / f"failed-{pathlib.Path(command[0]).name}-{int(time.time())}.log"
        shutil.copy(log, kept)
        sys.exit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(command)}\nfull log (with any backtrace): {kept}\n"
                 f"{log.read_text()[-2000:]}")
    return wall, int(peak.read_text().strip().splitlines()[-1]) / 1024


TEST_ORIGIN = ROOT / ".build" / "release" / "batchfetch-test-origin"


def start_test_origin(directory: pathlib.Path, head_delay_ms: int) -> tuple[subprocess.Popen, str]:
    """batchfetch-test-origin serving `directory`, every response head delayed `head_delay_ms`."""
    if not TEST_ORIGIN.exists():
        sys.exit("build first: swift build -c release --product batchfetch-test-origin")
    port_file = pathlib.Path(tempfile.mkstemp(prefix="origin-port-")[1])
    port_file.unlink()
    process = subprocess.Popen([str(TEST_ORIGIN), "--directory", str(directory), "--head-delay", str(head_delay_ms),
                                "--port-file", str(port_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if port_file.exists() and port_file.read_text().strip():
            return process, f"http://127.0.0.1:{port_file.read_text().strip()}"
        time.sleep(0.05)
    sys.exit("batchfetch-test-origin did not start")


def tools_for(scenario: str, base: str, out: pathlib.Path, lists: pathlib.Path, size_mib: int) -> dict[str, list[str]]:
    tools: dict[str, list[str]] = {}
    def big(segments: int) -> pathlib.Path:
        manifest = lists / f"big-{segments}.yaml"
        manifest.write_text(f"version: 1\noutput_dir: {out}\njobs:\n"
                            f"  - {{id: big, url: '{base}/big.bin', size: {size_mib << 20}, segments: {segments}}}\n")
        return manifest

    if scenario == "single":
        manifest = big(1)
        tools["batchfetch"] = [str(BIN), "run", str(manifest), "--report", str(lists / "report.json")]
        # Like for like: the default durability (batch) ends with a syncfs, --durability none
        # publishes without one, as curl -o does.
        tools["batchfetch --durability none"] = [str(BIN), "run", str(manifest), "--durability", "none",
                                                 "--report", str(lists / "report.json")]
        tools["curl -o"] = ["curl", "-s", "-o", str(out / "big.bin"), f"{base}/big.bin"]
        tools["curl -o && sync"] = ["sh", "-c", f"curl -s -o '{out / 'big.bin'}' '{base}/big.bin' && sync"]
        tools["wget"] = ["wget", "-q", "-O", str(out / "big.bin"), f"{base}/big.bin"]
        tools["aria2c -x1"] = ["aria2c", "-q", "-x1", "-s1", "--file-allocation=none", "-d", str(out), "-o", "big.bin", f"{base}/big.bin"]
    elif scenario == "segmented":
        tools["batchfetch"] = [str(BIN), "run", str(big(4)), "--report", str(lists / "report.json")]
        tools["aria2c -x4 -s4"] = ["aria2c", "-q", "-x4", "-s4", "--file-allocation=none", "-d", str(out), "-o", "big.bin", f"{base}/big.bin"]
        tools["curl -o"] = ["curl", "-s", "-o", str(out / "big.bin"), f"{base}/big.bin"]
    elif scenario == "capped":
        def unsized(segments: str) -> pathlib.Path:
            manifest = lists / f"capped-{segments}.yaml"
            manifest.write_text(f"version: 1\noutput_dir: {out}\njobs:\n"
                                f"  - {{id: big, url: '{base}/capped/big.bin', segments: {segments}}}\n")
            return manifest
        tools["batchfetch"] = [str(BIN), "run", str(unsized("auto")), "--report", str(lists / "report.json")]
        tools["batchfetch segments: 8"] = [str(BIN), "run", str(unsized("8")), "--report", str(lists / "report.json")]
        tools["curl -o"] = ["curl", "-s", "-o", str(out / "big.bin"), f"{base}/capped/big.bin"]
        tools["aria2c -x4 -s4"] = ["aria2c", "-q", "-x4", "-s4", "--file-allocation=none", "-d", str(out), "-o", "big.bin", f"{base}/capped/big.bin"]
        tools["aria2c -x8 -s8"] = ["aria2c", "-q", "-x8", "-s8", "--file-allocation=none", "-d", str(out), "-o", "big.bin", f"{base}/capped/big.bin"]
    elif scenario == "latency":
        for concurrency in (8, 32):
            manifest = lists / f"latency-{concurrency}.yaml"
            jobs = "".join(f"  - {{id: f{i}, url: '{base}/f{i}.bin', size: 65536}}\n" for i in range(2000))
            manifest.write_text(f"version: 1\noutput_dir: {out}\nconcurrency: {concurrency}\nper_host: {concurrency}\njobs:\n{jobs}")
            name = "batchfetch" if concurrency == 8 else f"batchfetch concurrency {concurrency}"
            tools[name] = [str(BIN), "run", str(manifest), "--report", str(lists / "report.json")]
        curl_config = lists / "curl-latency.cfg"
        curl_config.write_text("".join(f'url = "{base}/f{i}.bin"\noutput = "{out}/f{i}.bin"\n' for i in range(2000)))
        for concurrency in (8, 32):
            tools[f"curl --parallel-max {concurrency}"] = ["curl", "-s", "--parallel", "--parallel-max", str(concurrency), "-K", str(curl_config)]
        undelayed = lists / "curl-undelayed.cfg"
        undelayed.write_text(curl_config.read_text().replace(base, lists.joinpath("undelayed-base").read_text()))
        tools["curl --parallel-max 32, origin without delay"] = ["curl", "-s", "--parallel", "--parallel-max", "32", "-K", str(undelayed)]
    elif scenario == "slowdisk":
        tools["batchfetch"] = [str(BIN), "run", str(big(1)), "--report", str(lists / "report.json")]
        tools["batchfetch segments: 4"] = [str(BIN), "run", str(big(4)), "--report", str(lists / "report.json")]
    elif scenario in ("many", "tiny"):
        # many: 2,000 × 64 KiB; tiny: 20,000 × 4 KiB; each at concurrency 8 and 32.
        folder, count, size = ("small", 2000, 65536) if scenario == "many" else ("tiny", 20000, 4096)
        jobs = "".join(f"  - {{id: f{i}, url: '{base}/{folder}/f{i}.bin', size: {size}}}\n" for i in range(count))
        curl_config = lists / f"curl-{scenario}.cfg"
        curl_config.write_text("".join(f'url = "{base}/{folder}/f{i}.bin"\noutput = "{out}/f{i}.bin"\n' for i in range(count)))
        url_list = lists / f"urls-{scenario}.txt"
        url_list.write_text("".join(f"{base}/{folder}/f{i}.bin\n" for i in range(count)))
        for concurrency in (8, 32):
            manifest = lists / f"{scenario}-{concurrency}.yaml"
            manifest.write_text(f"version: 1\noutput_dir: {out}\nconcurrency: {concurrency}\nper_host: {concurrency}\njobs:\n{jobs}")
            name = "batchfetch" if concurrency == 8 else f"batchfetch concurrency {concurrency}"
            tools[name] = [str(BIN), "run", str(manifest), "--report", str(lists / "report.json")]
        # Most manifests give no size for small files: the same batch without them.
        unsized = lists / f"{scenario}-8-unsized.yaml"
        unsized.write_text(f"version: 1\noutput_dir: {out}\nconcurrency: 8\nper_host: 8\njobs:\n"
                           + jobs.replace(f", size: {size}}}", "}"))
        tools["batchfetch, no sizes in the manifest"] = [str(BIN), "run", str(unsized), "--report", str(lists / "report.json")]
        for concurrency in (8, 32):
            tools[f"curl --parallel-max {concurrency}"] = ["curl", "-s", "--parallel", "--parallel-max", str(concurrency), "-K", str(curl_config)]
            # Like for like with batchfetch's default durability, which ends with a syncfs.
            tools[f"curl --parallel-max {concurrency} && sync"] = [
                "sh", "-c", f"curl -s --parallel --parallel-max {concurrency} -K '{curl_config}' && sync"]
            tools[f"aria2c -j{concurrency}"] = ["aria2c", "-q", "-j", str(concurrency), "--file-allocation=none", "-d", str(out), "-i", str(url_list)]
        tools["wget -i (one at a time)"] = ["wget", "-q", "-P", str(out), "-i", str(url_list)]
    return {name: command for name, command in tools.items() if shutil.which(command[0]) or command[0] == str(BIN)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scenarios", default="single,many,tiny,segmented,slowdisk")
    parser.add_argument("--size-mib", type=int, default=1024)
    args = parser.parse_args()
    if not BIN.exists():
        sys.exit("build first: swift build -c release --product batchfetch")

    nginx, base, prefix = serve(args.size_mib, "batchfetch-bench")
    www = WORK / "www"
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"`bench/download-bench.py --runs {args.runs} --scenarios {args.scenarios} --size-mib {args.size_mib}`; load when it "
        f"started: `{uptime}`.",
        "",
        f"Download benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
        f"nginx on loopback, median of {args.runs} runs (before each: sync, and as root the page cache emptied and the "
        f"data and tools read back, see `settle_page_cache`). batchfetch verifies sha256 and size "
        "and publishes atomically; the peers verify nothing. `batchfetch` uses URLSession (the default), "
        "`batchfetch nio` AsyncHTTPClient (BATCHFETCH_TRANSPORT=nio).",
        "",
    ]
    origins = []
    try:
        for scenario in args.scenarios.split(","):
            out = prefix / "out"
            scenario_base = base
            if scenario == "latency":
                delayed, delayed_base = start_test_origin(www / "small", head_delay_ms=20)
                plain, plain_base = start_test_origin(www / "small", head_delay_ms=0)
                origins += [delayed, plain]
                (prefix / "undelayed-base").write_text(plain_base)
                scenario_base = delayed_base
            tools = tools_for(scenario, scenario_base, out, prefix, args.size_mib)
            # Every batchfetch row runs once per transport: URLSession (the default) and nio.
            variants = {}
            for name, command in tools.items():
                variants[name] = (command, {})
                if command[0] == str(BIN):
                    variants[name.replace("batchfetch", "batchfetch nio", 1)] = (command, {"BATCHFETCH_TRANSPORT": "nio"})
            results = {}
            base_env = {"BATCHFETCH_SIMULATED_DISK_RATE": "200MiB/s"} if scenario == "slowdisk" else {}
            for name, (command, env) in variants.items():
                runs = [measure(command, prefix, out, {**base_env, **env}) for _ in range(args.runs)]
                results[name] = (statistics.median(r[0] for r in runs), max(r[1] for r in runs))
            ours = results["batchfetch"][0]
            theirs = results["batchfetch nio"][0]
            label = {"single": f"one {args.size_mib} MiB file, one connection",
                     "many": "2,000 files of 64 KiB, 8 and 32 at a time",
                     "tiny": "20,000 files of 4 KiB, 8 and 32 at a time",
                     "segmented": f"one {args.size_mib} MiB file, 4 connections",
                     "slowdisk": f"one {args.size_mib} MiB file, disk simulated at 200 MiB/s (memory bound; no peers)",
                     "capped": f"one {args.size_mib} MiB file, mirror capped at 20 MB/s per connection, no size in the manifest",
                     "latency": "2,000 files of 64 KiB, every response head delayed 20 ms (floor: 5.0 s at concurrency 8, 1.25 s at 32)"}[scenario]
            lines += [f"### {label}", "",
                      "| tool | wall (median) | peak RSS | batchfetch (URLSession) / tool | batchfetch nio / tool |",
                      # (rows at concurrency 32 are compared with batchfetch at concurrency 32)
                      "|---|---|---|---|---|"]
            for name, (wall, rss) in results.items():
                # A row at concurrency 32 (`-j32`, `--parallel-max 32`) compares with batchfetch at 32.
                at32 = "32" in name and "batchfetch concurrency 32" in results
                mine = results["batchfetch concurrency 32"][0] if at32 else ours
                mine_nio = results["batchfetch nio concurrency 32"][0] if at32 else theirs
                lines.append(f"| {name} | {wall:.2f} s | {rss:.0f} MiB | {mine / wall:.2f}× | {mine_nio / wall:.2f}× |")
            lines.append("")
            if scenario == "single":
                lines += ["batchfetch's default durability (`batch`) ends the run with a `syncfs` of the output's file "
                          "system, so the gigabyte is on disk when it exits: compare `batchfetch` with "
                          "`curl -o && sync`, and `batchfetch --durability none` with `curl -o`.", ""]
            if scenario in ("many", "tiny"):
                lines += ["batchfetch's default durability (`batch`) ends the run with a `syncfs`, so the files are on "
                          "disk when it exits, as they are after `curl --parallel … && sync`; plain `curl --parallel` "
                          "leaves them to the kernel's writeback.", ""]
            if scenario == "capped":
                lines += ["nginx applies `limit_rate` per request and lets each request send its first second's worth "
                          "at full speed (`limit * (elapsed + 1)`), so ranges of a few MiB — URLSession's, a share of the "
                          "8 MiB memory cap — are mostly served unthrottled, which is why they beat connections × 20 MB/s; "
                          "nio's 16 MiB ranges and the peers' long requests are throttled.", ""]
    finally:
        nginx.kill()
        for origin in origins:
            origin.kill()
        shutil.rmtree(prefix, ignore_errors=True)  # the graveyard too: after the last run
    report = "\n".join(lines)
    print(report)
    default = parser.get_default("scenarios")
    target = ROOT / "bench" / "results" / ("downloads.md" if args.scenarios == default else f"downloads-{args.scenarios.replace(',', '-')}.md")
    target.write_text(report + "\n")
    print(f"written to {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
