#!/usr/bin/env python3
"""Hostile-server benchmark (not a test): peak RSS and bytes moved when servers misbehave.

Runs the release binary on each transport against real servers on loopback:
  rangeless   `python3 -m http.server` (no Range support) serving a 300 MB file
  gzipbomb    nginx serving 1 MiB of gzip that inflates to 1 GiB, with `Content-Encoding: gzip`
  changed     nginx, 1 GiB with `segments: 4`, killed at about half, the file rewritten with the
              same size, then rerun (each segment's If-Range answered with a 200)
  rangelessbatch  `python3 -m http.server`, the 300 MB file beside five of 1-5 MB at
              concurrency 4 (URLSession queued 50-300 MB of refused bodies, issue 33)
  h2segments  nginx over TLS and HTTP/2 (a throwaway CA), 300 MB with `segments: 4`, also with
              the disk simulated at 100 MiB/s (`h2slowdisk`): h2 streams' windows, issue 33
For each: exit status, peak RSS of the batchfetch process (limit 64 MiB), the attempts the report
records, whether the published file has the server's bytes, and the wall time.

usage: bench/hostile-bench.py [--scenarios rangeless,gzipbomb,changed,rangelessbatch,h2segments,h2slowdisk]
                              [--transports urlsession,nio]
Results are printed as a markdown table and written to bench/results/hostile.md.
"""
import argparse
import gzip
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import benchlib
from benchlib import free_port, wait_listening

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = pathlib.Path(os.environ.get("BATCHFETCH_BENCH_BINARY", ROOT / ".build" / "release" / "batchfetch"))
MIB = 1 << 20


def start_nginx(root: pathlib.Path, prefix: pathlib.Path, rate: str = "0") -> tuple[subprocess.Popen, int]:
    """nginx that marks /gz/ as gzip-encoded and caps /slow/ at `rate`."""
    return benchlib.start_nginx(root, prefix, locations=f"location /gz/ {{ add_header Content-Encoding gzip; }} "
                                f"location /slow/ {{ limit_rate {rate}; }}")


def run_batchfetch(directory: pathlib.Path, transport: str, kill_when=None, env_extra=None) -> dict:
    """Runs `batchfetch run m.yaml`; returns status, peak RSS (KiB) and seconds. Peak RSS comes
    from GNU time (`/usr/bin/time`): `wait4` here would also count the pages of this Python
    process that the child had before its exec (some 33 MiB). A run killed when `kill_when`
    says so is killed directly and reports no RSS."""
    env = dict(os.environ, BATCHFETCH_TRANSPORT=transport, **(env_extra or {}))
    command = [str(BIN), "run", "m.yaml", "--progress", "none"]
    rss_file = directory / "peak-rss.txt"
    if kill_when is None:
        command = ["/usr/bin/time", "-f", "%M", "-o", str(rss_file)] + command
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=directory, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if kill_when:
        while process.poll() is None and not kill_when():
            time.sleep(0.01)
        process.kill()
    stderr = process.communicate()[1].decode()
    rss = int(rss_file.read_text().split()[-1]) if kill_when is None else None
    return {"status": process.returncode, "rss_kib": rss, "seconds": time.monotonic() - started, "stderr": stderr}


def report(directory: pathlib.Path) -> dict:
    path = directory / "data" / "batchfetch-report.json"
    return json.loads(path.read_text())["jobs"][0] if path.exists() else {}


def sha256_file(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(4 * MIB):
            digest.update(block)
    return digest.hexdigest()


def write_random(path: pathlib.Path, size: int, seed: int) -> None:
    block = hashlib.sha256(str(seed).encode()).digest() * (MIB // 32)
    with open(path, "wb") as f:
        for index in range(size // MIB):
            f.write(index.to_bytes(8, "little") + block[8:])


def manifest(directory: pathlib.Path, url: str, extra: str = "", header: str = "", others: str = "") -> None:
    (directory / "m.yaml").write_text(
        f"version: 1\noutput_dir: data\n{header}jobs:\n  - {{id: f, url: \"{url}\", dest: f.bin{extra}}}\n{others}")


def measure(work: pathlib.Path, transport: str, url: str, expected: pathlib.Path, extra: str = "",
            before=None, header: str = "", others: str = "", env_extra=None) -> dict:
    """One run in a fresh directory (after `before(directory)`, e.g. a killed first run); adds the
    report's attempts (of the job `f`) and whether the published file equals `expected`."""
    directory = pathlib.Path(tempfile.mkdtemp(dir=work))
    manifest(directory, url, extra, header, others)
    if before:
        before(directory)
    result = run_batchfetch(directory, transport, env_extra=env_extra)
    result["attempts"] = report(directory).get("attempts")
    stored = directory / "data/f.bin"
    result["correct"] = stored.exists() and sha256_file(stored) == sha256_file(expected)
    shutil.rmtree(directory)
    return result


def served_file(directory: pathlib.Path, name: str, size: int, seed: int) -> pathlib.Path:
    """`directory/name`, `size` bytes of seeded random data, written unless already there."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    if not path.exists():
        write_random(path, size, seed)
    return path


def start_python_server(www: pathlib.Path) -> tuple[subprocess.Popen, int]:
    """`python3 -m http.server` (no Range support) serving `www` on a free port."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", str(www)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port)
    return server, port


def scenario_rangeless(work: pathlib.Path, transport: str) -> dict:
    www = work / "www"
    source = served_file(www, "big.bin", 300 * MIB, 1)
    server, port = start_python_server(www)
    try:
        return measure(work, transport, f"http://127.0.0.1:{port}/big.bin", source)
    finally:
        server.kill()


def scenario_rangelessbatch(work: pathlib.Path, transport: str) -> dict:
    www = work / "www"
    source = served_file(www, "big.bin", 300 * MIB, 1)
    for index in range(1, 6):
        served_file(www, f"s{index}.bin", index * MIB, 10 + index)
    server, port = start_python_server(www)
    try:
        others = "".join(f"  - {{id: s{index}, url: \"http://127.0.0.1:{port}/s{index}.bin\"}}\n" for index in range(1, 6))
        return measure(work, transport, f"http://127.0.0.1:{port}/big.bin", source, header="concurrency: 4\n",
                       others=others)
    finally:
        server.kill()


def h2_nginx(work: pathlib.Path) -> tuple[subprocess.Popen, int, pathlib.Path, pathlib.Path]:
    """nginx over TLS with HTTP/2 and a throwaway CA; returns it, its port, the CA and the file."""
    pki = work / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    script = ROOT / "Tests" / "Support" / "make_test_pki.sh"
    if not (pki / "ca.pem").exists():
        subprocess.run(["/bin/sh", str(script), str(pki)], check=True, stdout=subprocess.DEVNULL)
    www = work / "h2www"
    source = served_file(www, "big.bin", 300 * MIB, 4)
    process, port = benchlib.start_nginx(
        www, work / "nginx-h2", listen=" ssl http2",
        locations=f"ssl_certificate {pki}/server.pem; ssl_certificate_key {pki}/server.key;")
    return process, port, pki / "ca.pem", source


def scenario_h2segments(work: pathlib.Path, transport: str, env_extra=None) -> dict:
    nginx, port, ca, source = h2_nginx(work)
    try:
        return measure(work, transport, f"https://127.0.0.1:{port}/big.bin", source,
                       f", segments: 4, tls: {{ca_file: \"{ca}\"}}", env_extra=env_extra)
    finally:
        nginx.kill()


def scenario_h2slowdisk(work: pathlib.Path, transport: str) -> dict:
    return scenario_h2segments(work, transport, {"BATCHFETCH_SIMULATED_DISK_RATE": "100MiB/s"})


def scenario_gzipbomb(work: pathlib.Path, transport: str) -> dict:
    www = work / "gzwww" / "gz"
    www.mkdir(parents=True, exist_ok=True)
    bomb = www / "bomb.bin"
    if not bomb.exists():
        with gzip.open(bomb, "wb", compresslevel=9) as f:
            zeros = bytes(4 * MIB)
            for _ in range(256):
                f.write(zeros)
    nginx, port = start_nginx(work / "gzwww", work / "nginx-gz")
    try:
        return measure(work, transport, f"http://127.0.0.1:{port}/gz/bomb.bin", bomb)
    finally:
        nginx.kill()


def scenario_changed(work: pathlib.Path, transport: str) -> dict:
    www = work / "chwww" / "slow"
    www.mkdir(parents=True, exist_ok=True)
    source = www / "big.bin"
    write_random(source, 1024 * MIB, 2)
    nginx, port = start_nginx(work / "chwww", work / "nginx-ch", rate="64m")
    try:
        def killed_then_rewritten(directory: pathlib.Path) -> None:
            sidecar = directory / "data" / "f.bin.part.json"

            def half_done() -> bool:
                try:
                    ranges = json.loads(sidecar.read_text()).get("ranges_done", [])
                except (OSError, ValueError):
                    return False
                return sum(end - start for start, end in ranges) >= 512 * MIB

            run_batchfetch(directory, transport, kill_when=half_done)
            time.sleep(1.1)  # a new mtime second: nginx's ETag changes
            write_random(source, 1024 * MIB, 3)

        return measure(work, transport, f"http://127.0.0.1:{port}/slow/big.bin", source,
                       ", size: 1073741824, segments: 4", before=killed_then_rewritten)
    finally:
        nginx.kill()


SCENARIOS = {"rangeless": scenario_rangeless, "gzipbomb": scenario_gzipbomb, "changed": scenario_changed,
             "rangelessbatch": scenario_rangelessbatch, "h2segments": scenario_h2segments,
             "h2slowdisk": scenario_h2slowdisk}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenarios", default="rangeless,gzipbomb,changed,rangelessbatch,h2segments,h2slowdisk")
    parser.add_argument("--transports", default="urlsession,nio")
    args = parser.parse_args()
    if not BIN.exists():
        sys.exit(f"{BIN} missing: run `make release` first")
    work = ROOT / "bench" / "work" / "hostile"
    work.mkdir(parents=True, exist_ok=True)
    rows = ["| scenario | transport | exit | peak RSS | attempts | bytes correct | seconds |", "|---|---|---|---|---|---|---|"]
    for name in args.scenarios.split(","):
        for transport in args.transports.split(","):
            result = SCENARIOS[name](work, transport)
            row = (f"| {name} | {transport} | {result['status']} | {result['rss_kib'] / 1024:.0f} MiB | "
                   f"{result['attempts']} | {'yes' if result['correct'] else 'NO'} | {result['seconds']:.1f} |")
            print(row, flush=True)
            if result["status"] != 0:
                print(result["stderr"][-2000:], file=sys.stderr)
            rows.append(row)
    shutil.rmtree(work, ignore_errors=True)
    text = "# Hostile servers: peak RSS and bytes (bench/hostile-bench.py)\n\n" + "\n".join(rows) + "\n"
    (ROOT / "bench" / "results" / "hostile.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
