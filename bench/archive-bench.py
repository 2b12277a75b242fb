#!/usr/bin/env python3
"""`extract:` (not a test; issue 37): what unpacking an archive costs batchfetch against GNU tar,
bsdtar and unzip on the same file, in one run of this script.

An archive of --files files (default 10,000) totalling --mib MiB (default 1024) of incompressible
bytes (a dataset of JPEGs is), as tar.gz, tar.zst and zip, made once under bench/work/archives.
For each format, batchfetch fetches it from nginx once (so that the archive is at its dest,
verified), then each measured `batchfetch run` unpacks it into a fresh `into` (the archive is
up to date: the run reads it from disk, as `tar -x` does); the peers unpack the same file into a
fresh directory. Outputs are removed after each measurement, all tools taking turns. Median of
--runs, peak RSS the largest seen.

Then the tar.gz from a mirror capped at 50 MB/s per connection (nginx `limit_rate`, no size in
the manifest: one stream), downloaded alone against downloaded and unpacked while it arrives.

Then the bombs (`--sections bombs`, one run each): a tar.gz of a million empty files in 1,000
directories unpacked whole under the default caps, by GNU tar, bsdtar and batchfetch (download
and unpack), each into a directory of its own, all removed only at the end (ext4 without a
journal skips inodes freed in the last minute — six while their table is dirty — when it
allocates: a million of them made the next tool's creates four times slower; run it at least
six minutes after anything deleted many files); and a tar.gz of 10 GiB of zeros (10 MB,
1,000:1) that batchfetch stops at its default `max_size` (1 GiB) — the peers would write all
10 GiB.

Writes bench/results/archives.md with the command that produced it (a run of some sections only:
bench/results/archives-SECTIONS.md).
usage: bench/archive-bench.py [--mib N] [--files N] [--runs N] [--bin PATH] [--sections peers,streaming,bombs]
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from benchlib import start_nginx, timed

ROOT = pathlib.Path(__file__).resolve().parent.parent


def make_archives(www: pathlib.Path, mib: int, files: int) -> dict:
    """tar.gz, tar.zst and zip of the same tree (made once); name by format."""
    www.mkdir(parents=True, exist_ok=True)
    stem = f"data-{mib}m-{files}"
    names = {"tar.gz": f"{stem}.tar.gz", "tar.zst": f"{stem}.tar.zst", "zip": f"{stem}.zip"}
    if all((www / name).exists() for name in names.values()):
        return names
    tree = www / stem
    size = (mib << 20) // files
    for index in range(files):
        path = tree / f"d{index // 100:03d}" / f"f{index:06d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    subprocess.run(["tar", "-C", str(www), "-cf", str(www / f"{stem}.tar"), stem], check=True)
    subprocess.run(f"gzip -1 -c '{www / stem}.tar' > '{www / names['tar.gz']}'", shell=True, check=True)
    subprocess.run(["zstd", "-q", "-1", "-f", str(www / f"{stem}.tar"), "-o", str(www / names["tar.zst"])], check=True)
    (www / f"{stem}.tar").unlink()
    with zipfile.ZipFile(www / names["zip"], "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for path in sorted(tree.rglob("*")):
            archive.write(path, path.relative_to(www).as_posix())
    shutil.rmtree(tree)
    return names


def make_bombs(www: pathlib.Path) -> tuple:
    """A million empty files in a tar.gz, and 10 GiB of zeros in one (made once)."""
    many, zeros = www / "million-entries.tar.gz", www / "zeros-10g.tar.gz"
    if not many.exists():
        with tarfile.open(many, "w:gz", compresslevel=1, format=tarfile.GNU_FORMAT) as archive:
            for d in range(1000):
                info = tarfile.TarInfo(f"d{d:04d}")
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                archive.addfile(info)
                for i in range(1000):
                    info = tarfile.TarInfo(f"d{d:04d}/f{i:04d}.txt")
                    info.mode = 0o644
                    archive.addfile(info)
    if not zeros.exists():
        class Zeros:
            def read(self, n: int) -> bytes:
                return bytes(n)
        info = tarfile.TarInfo("zeros.bin")
        info.size = 10 << 30
        with tarfile.open(zeros, "w:gz", compresslevel=1) as archive:
            archive.addfile(info, Zeros())
    return many.name, zeros.name


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bin", default=str(ROOT / ".build/release/batchfetch"))
    parser.add_argument("--sections", default="peers,streaming,bombs", help="peers, streaming, bombs (comma-separated)")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    lines = ["# Archives: unpacking with `extract:` against GNU tar, bsdtar and unzip", "",
             f"`bench/archive-bench.py --mib {args.mib} --files {args.files} --runs {args.runs} --sections {args.sections}` on a release build, "
             f"2 cores, {subprocess.run(['stat', '-f', '-c', '%T', str(ROOT)], capture_output=True, text=True).stdout.strip()}; "
             f"load when it started: {os.getloadavg()[0]:.2f} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
             f"{args.files:,} files, {args.mib} MiB of incompressible bytes; the archive already at its dest, verified: "
             "each row is the unpacking alone (for batchfetch, a whole `run` whose archive is up to date).", "",
             "| format | tool | wall (median) | peak RSS | batchfetch ÷ this |", "|---|---|---|---|---|"]
    www = ROOT / "bench" / "work" / "archives"
    names = make_archives(www, args.mib, args.files)
    with tempfile.TemporaryDirectory(prefix="bf-archive-", dir=str(ROOT / "bench" / "work")) as tmp:
        tmp = pathlib.Path(tmp)
        nginx, port = start_nginx(www, tmp / "nginx", locations="location /capped/ { alias " + str(www) + "/; limit_rate 50m; }")
        try:
            for format, name in (names.items() if "peers" in sections else []):
                manifest = tmp / f"{format}.yaml"

                def write_manifest(into: str) -> None:
                    manifest.write_text(f"version: 1\noutput_dir: out\njobs:\n  - {{id: a, url: 'http://127.0.0.1:{port}/{name}', "
                                        f"dest: {name}, extract: {{into: {into}, max_size: 100GiB}}}}\n")

                write_manifest("first")
                subprocess.run([args.bin, "run", str(manifest), "--progress", "none"], check=True)
                shutil.rmtree(tmp / "out" / "first")
                archive = tmp / "out" / name
                peers = {"tar.gz": [("GNU tar -xzf", ["tar", "-xzf", str(archive)]), ("bsdtar -xf", ["bsdtar", "-xf", str(archive)])],
                         "tar.zst": [("GNU tar --zstd -xf", ["tar", "--zstd", "-xf", str(archive)]),
                                     ("bsdtar -xf", ["bsdtar", "-xf", str(archive)])],
                         "zip": [("unzip -q", ["unzip", "-q", str(archive)]), ("bsdtar -xf", ["bsdtar", "-xf", str(archive)])]}[format]
                results = {"batchfetch": []} | {label: [] for label, _ in peers}
                for run in range(args.runs):
                    into = f"tree{run}"
                    write_manifest(into)
                    subprocess.run(["sync"], check=True)
                    results["batchfetch"].append(timed([args.bin, "run", str(manifest), "--progress", "none"]))
                    shutil.rmtree(tmp / "out" / into)
                    for label, command in peers:
                        target = tmp / f"peer{run}"
                        target.mkdir()
                        subprocess.run(["sync"], check=True)
                        os.chdir(target)
                        results[label].append(timed(command))
                        os.chdir(tmp)
                        shutil.rmtree(target)
                ours = statistics.median(r[0] for r in results["batchfetch"])
                for label, measured in results.items():
                    wall = statistics.median(r[0] for r in measured)
                    lines.append(f"| {format} | {label} | {wall:.2f} s | {max(r[1] for r in measured):.0f} MiB | "
                                 f"{'1' if label == 'batchfetch' else f'{ours / wall:.2f}'}× |")
                print("\n".join(lines[-len(results):]), flush=True)
                (tmp / "out" / name).unlink()

            # Streaming: the tar.gz from a mirror capped at 50 MB/s per connection (nginx
            # limit_rate), downloaded alone against downloaded and unpacked in one run, on each
            # transport; one stream (`segments: 1`), then the default (`auto`: four segments for
            # a large file), both unpacked while the bytes arrive.
            if "streaming" in sections:
                lines += ["", f"## Streaming: the tar.gz from a mirror capped at 50 MB/s per connection (median of {args.runs})", "",
                          "| transport | segments | run | wall | peak RSS | ratio to the download alone |", "|---|---|---|---|---|---|"]
                for transport in ["urlsession", "nio"]:
                    for segments in ["1", "auto"]:
                        alone, unpacked = [], []
                        for run in range(args.runs):
                            for label, extract, measured in [("alone", "", alone), ("unpacked", f", extract: {{into: s{run}, max_size: 100GiB}}", unpacked)]:
                                manifest = tmp / f"stream-{label}-{run}.yaml"
                                manifest.write_text(f"version: 1\noutput_dir: s{label}{run}\njobs:\n  - {{id: a, url: 'http://127.0.0.1:{port}/capped/"
                                                    f"{names['tar.gz']}', dest: a.tar.gz, segments: {segments}{extract}}}\n")
                                subprocess.run(["sync"], check=True)
                                measured.append(timed([args.bin, "run", str(manifest), "--progress", "none", "--transport", transport]))
                                shutil.rmtree(tmp / f"s{label}{run}")
                        base = statistics.median(r[0] for r in alone)
                        for label, measured in [("download alone", alone), ("download and unpack (`extract:`)", unpacked)]:
                            wall = statistics.median(r[0] for r in measured)
                            lines.append(f"| {transport} | {segments} | {label} | {wall:.2f} s | {max(r[1] for r in measured):.0f} MiB | {wall / base:.2f}× |")
                        print("\n".join(lines[-2:]), flush=True)
            if "bombs" in sections:
                many, zeros = make_bombs(www)
                lines += ["", "## Bombs (one run each, default caps)", "",
                          "| archive | tool | outcome | wall | peak RSS |", "|---|---|---|---|---|"]
                kept = []
                for name, peers in [(many, [("GNU tar -xzf", ["tar", "-xzf"]), ("bsdtar -xf", ["bsdtar", "-xf"])]), (zeros, [])]:
                    # Every tree stays until the end: ext4 without a journal skips inodes freed in
                    # the last 60 s (6 min while their table is dirty) when it allocates, and a
                    # million of them made the next tool's creates four times slower.
                    archive = tmp / f"{name}.archive"
                    shutil.copy(www / name, archive)
                    for label, command in peers:
                        target = tmp / f"peer-{label.split()[0]}-{name}"
                        target.mkdir()
                        subprocess.run(["sync"], check=True)
                        os.chdir(target)
                        wall, rss = timed(command + [str(archive)])
                        os.chdir(tmp)
                        lines.append(f"| {name} | {label} | {sum(1 for _ in target.rglob('*.txt')):,} files | {wall:.2f} s | {rss:.0f} MiB |")
                        print(lines[-1], flush=True)
                        kept.append(target)
                    output = tmp / f"bomb-{name}"
                    manifest = tmp / "bomb.yaml"
                    manifest.write_text(f"version: 1\noutput_dir: {output}\njobs:\n  - {{id: a, url: 'http://127.0.0.1:{port}/{name}', "
                                        f"dest: {name}, extract: {{into: tree}}}}\n")
                    subprocess.run(["sync"], check=True)
                    wall, rss = timed([args.bin, "run", str(manifest), "--progress", "none", "--report", str(tmp / "bomb.json")], check=False)
                    job = json.loads((tmp / "bomb.json").read_text())["jobs"][0]
                    outcome = f"{job['extracted']['files']:,} files" if job["status"] == "downloaded" else job["error"]["code"]
                    lines.append(f"| {name} | batchfetch (download and unpack) | {outcome} | {wall:.2f} s | {rss:.0f} MiB |")
                    print(lines[-1], flush=True)
                    kept.append(output)
                for tree in kept:
                    shutil.rmtree(tree, ignore_errors=True)
        finally:
            nginx.terminate()
            nginx.wait()
    lines += ["", "The ratio of the first table is batchfetch's time over the peer's: 1.05× or less is the goal; "
              "of the second, the run that unpacks over the download alone: 1.1× or less (issue 37).", ""]
    text = "\n".join(lines)
    print(text)
    # Only a run of every section replaces archives.md; a run of some writes its own file.
    every = {"peers", "streaming", "bombs"}
    name = "archives.md" if sections >= every else "archives-" + "-".join(sorted(sections & every)) + ".md"
    (ROOT / "bench" / "results" / name).write_text(text)


if __name__ == "__main__":
    main()
