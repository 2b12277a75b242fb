#!/usr/bin/env python3
"""Many-mirror goals (issue 54), in one sitting against TestOrigin mirrors on loopback that cap
each connection (`batchfetch-test-origin --rate-per-connection 20MB`: every response paced from
its first byte, unlike nginx's `limit_rate`, which sends each request's first second unthrottled):

  one     one mirror, 256 MiB, `segments: 4` — batchfetch against `aria2c -x4 -s4` and curl
  two     two mirrors (127.0.0.1 and 127.0.0.2), `per_host: 2`, `segments: 4`, `sources: all`
          — against the ideal (size / (4 × cap)) and `aria2c -x2 -s4` given both URIs
  stall   two mirrors, the first stalls forever at 3/4 of the file (`--stall-from`): batchfetch
          `segments: 4`, `sources: all`, against the time of the rest on the other mirror alone
  corrupt two mirrors, a 1 GiB file whose first mirror flips one byte in the middle
          (`--corrupt-at`), 4 MiB piece hashes, `sources: all`: the bytes fetched again (report
          `bytes_transferred` minus the size; the goal is at most 8 MiB)

usage: bench/mirrors-bench.py BATCHFETCH TEST_ORIGIN [--runs 3] [--size-mib 256] [--scenarios one,two,stall,corrupt]
"""
import argparse
import hashlib
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

RATE = 20_000_000


def start_origin(origin_binary, host, size_mib, extra=(), capped=True):
    port = benchlib.free_port()
    cap = ["--rate-per-connection", f"{RATE // 1_000_000}MB"] if capped else []
    process = subprocess.Popen([origin_binary, "--host", host, "--port", str(port),
                                "--generated", f"/big.bin={size_mib}MiB:7", *cap, *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    process.stdout.readline()
    return process, f"http://{host}:{port}/big.bin"


def digests_of(url, piece=None):
    """The sha256 of the file at `url`, and of each `piece`-byte piece when asked."""
    whole, pieces, current, filled = hashlib.sha256(), [], hashlib.sha256(), 0
    with subprocess.Popen(["curl", "-s", url], stdout=subprocess.PIPE) as curl:
        for block in iter(lambda: curl.stdout.read(1 << 20), b""):
            whole.update(block)
            if piece:
                current.update(block)
                filled += len(block)
                if filled == piece:
                    pieces.append(current.hexdigest())
                    current, filled = hashlib.sha256(), 0
    if piece and filled:
        pieces.append(current.hexdigest())
    return whole.hexdigest(), pieces


NIO = ["env", "BATCHFETCH_TRANSPORT=nio"]


def synced(command):
    """`command`, then `sync`, as one timed process."""
    return ["sh", "-c", '"$@" && sync', "sh", *command]


def median_of(runs, command, clean):
    times = []
    for _ in range(runs):
        clean()
        times.append(benchlib.timed(command)[0])
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("batchfetch")
    parser.add_argument("test_origin")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--scenarios", default="one,two,stall,corrupt")
    args = parser.parse_args()
    binary, origin = os.path.abspath(args.batchfetch), os.path.abspath(args.test_origin)
    size = args.size_mib << 20
    ideal4 = size / (4 * RATE)
    work = pathlib.Path(tempfile.mkdtemp(prefix="mirrors-bench-"))
    out = work / "out"

    def clean():
        shutil.rmtree(out, ignore_errors=True)
        for state in work.glob(".batchfetch*"):
            shutil.rmtree(state, ignore_errors=True) if state.is_dir() else state.unlink()
        out.mkdir()

    processes = []
    try:
        first, url1 = start_origin(origin, "127.0.0.1", args.size_mib)
        processes.append(first)
        second, url2 = start_origin(origin, "127.0.0.2", args.size_mib)
        processes.append(second)
        sha = digests_of(url1)[0]
        print(f"Mirrors benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
              f"{args.size_mib} MiB, each connection capped at {RATE // 1_000_000} MB/s, median of {args.runs}.\n")
        print("| scenario | tool | wall (median) | ideal | wall / ideal | batchfetch / tool |")
        print("|---|---|---|---|---|---|")

        def manifest(name, urls, extra, size=size, sha=sha):
            path = work / f"{name}.yaml"
            mirrors = "[" + ", ".join(f"'{u}'" for u in urls) + "]"
            path.write_text(f"version: 1\noutput_dir: {out}\nper_host: 2\njobs:\n"
                            f"  - {{id: big, urls: {mirrors}, size: {size}, checksum: 'sha256:{sha}', segments: 4{extra}}}\n")
            return [binary, "run", str(path)]

        scenarios = args.scenarios.split(",")
        if "one" in scenarios:
            one = work / "one.yaml"
            one.write_text(f"version: 1\noutput_dir: {out}\njobs:\n  - {{id: big, url: '{url1}', size: {size}, checksum: 'sha256:{sha}', segments: 4}}\n")
            tools = {
                "batchfetch segments: 4": [binary, "run", str(one)],
                "batchfetch nio segments: 4": NIO + [binary, "run", str(one)],
                "aria2c -x4 -s4": ["aria2c", "-q", "-x4", "-s4", "--file-allocation=none", "-d", str(out), "-o", "big.bin", url1],
                # Like for like with batchfetch's default `durability: batch` (a syncfs before its report).
                "aria2c -x4 -s4; sync": synced(["aria2c", "-q", "-x4", "-s4", "--file-allocation=none", "-d", str(out),
                                                 "-o", "big.bin", url1]),
                "curl -o": ["curl", "-s", "-o", str(out / "big.bin"), url1],
            }
            times = {name: median_of(args.runs if name != "curl -o" else 1, cmd, clean) for name, cmd in tools.items()}
            ours = times["batchfetch segments: 4"]
            for name, seconds in times.items():
                print(f"| one mirror | {name} | {seconds:.2f} s | {ideal4:.2f} s | {seconds / ideal4:.2f}× | {ours / seconds:.2f}× |")
        if "two" in scenarios:
            tools = {
                "batchfetch sources: all": manifest("two", [url1, url2], ", sources: all"),
                "batchfetch nio sources: all": NIO + manifest("two", [url1, url2], ", sources: all"),
                "aria2c -x2 -s4 (both URIs)": ["aria2c", "-q", "-x2", "-s4", "--file-allocation=none", "-d", str(out),
                                                "-o", "big.bin", url1, url2],
                "aria2c -x2 -s4 (both URIs); sync": synced(["aria2c", "-q", "-x2", "-s4", "--file-allocation=none", "-d",
                                                            str(out), "-o", "big.bin", url1, url2]),
            }
            times = {name: median_of(args.runs, cmd, clean) for name, cmd in tools.items()}
            ours = times["batchfetch sources: all"]
            for name, seconds in times.items():
                print(f"| two mirrors | {name} | {seconds:.2f} s | {ideal4:.2f} s | {seconds / ideal4:.2f}× | {ours / seconds:.2f}× |")
        if "stall" in scenarios:
            stalling, url3 = start_origin(origin, "127.0.0.3", args.size_mib, ["--stall-from", str(size * 3 // 4)])
            processes.append(stalling)
            rest = (size // 4) / (2 * RATE)
            seconds = median_of(args.runs, manifest("stall", [url3, url2], ", sources: all, timeout: 600s"), clean)
            print(f"| stalling mirror | batchfetch sources: all | {seconds:.2f} s | {ideal4:.2f} s + | {seconds / ideal4:.2f}× | |")
            print(f"\nThe stalled last quarter alone takes {rest:.2f} s over the other mirror's two connections.")
        if "corrupt" in scenarios:
            big_mib, piece = 1024, 4 << 20
            flipping, bad_url = start_origin(origin, "127.0.0.4", big_mib, ["--corrupt-at", str((big_mib << 20) // 2 + 100)])
            good, good_url = start_origin(origin, "127.0.0.5", big_mib)
            plain, plain_url = start_origin(origin, "127.0.0.6", big_mib, capped=False)
            processes += [flipping, good, plain]
            big_sha, hashes = digests_of(plain_url, piece)
            pieces = f", sources: all, pieces: {{length: {piece}, sha256: [{', '.join(hashes)}]}}"
            command = manifest("corrupt", [bad_url, good_url], pieces, size=big_mib << 20, sha=big_sha)
            again = []
            for transport, prefix in (("URLSession", []), ("nio", NIO)):
                for _ in range(args.runs):
                    clean()
                    seconds = benchlib.timed(prefix + command)[0]
                    job = json.loads((out / "batchfetch-report.json").read_text())["jobs"][0]
                    again.append((transport, seconds, job["bytes_transferred"] - (big_mib << 20), job.get("pieces_repaired")))
            for transport, seconds, extra, repaired in again:
                print(f"| corrupt piece, 1 GiB | batchfetch {transport} sources: all, 4 MiB pieces | {seconds:.2f} s | "
                      f"{(big_mib << 20) / (4 * RATE):.2f} s | fetched again: {extra / (1 << 20):.2f} MiB | pieces_repaired: {repaired} |")
    finally:
        for process in processes:
            process.terminate()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
