#!/usr/bin/env python3
"""Sources (not a test; issue 49): resolving a 10,000-file Hugging Face tree and planning it,
against the tests' fake Hub (Tests/Support/fake_repos.py: the revision, then the tree 100 files
a page with Link headers, as the Hub paginates), on loopback; then `pin` of it (every file
downloaded) and `plan --locked`/`run --locked`, which must make no listing request at all.
When huggingface_hub is installed, its own `HfApi.list_repo_tree` against the same fake is the
peer of the listing row, measured in the same run.

Writes bench/results/sources.md with the command that produced it.
usage: bench/sources-bench.py [--files N] [--runs N] [--bin PATH]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from benchlib import free_port, timed, wait_listening

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMIT = "c" * 40


def api_requests(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_log") as answer:
        return sum(1 for entry in json.load(answer) if entry["path"].startswith("/api/"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bin", default=str(ROOT / ".build/release/batchfetch"))
    args = parser.parse_args()
    (ROOT / "bench" / "work").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bf-sources-", dir=str(ROOT / "bench" / "work")) as tmp:
        tmp = pathlib.Path(tmp)
        files = [{"path": f"shard-{n // 1000:02d}/part-{n:05d}.txt", "content": f"row {n}\n"} for n in range(args.files)]
        fixture = {"page_size": 100, "hf": {"datasets/acme/big": {"revisions": {"main": COMMIT}, "commits": {COMMIT: files}}}}
        (tmp / "fixture.json").write_text(json.dumps(fixture))
        port = free_port()
        fake = subprocess.Popen([sys.executable, str(ROOT / "Tests/Support/fake_repos.py"), str(port), str(tmp / "fixture.json")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(port)
        endpoint = f"http://127.0.0.1:{port}"
        os.environ.update({"HF_ENDPOINT": endpoint})
        try:
            manifest = tmp / "m.yaml"
            manifest.write_text("version: 1\noutput_dir: out\nconcurrency: 32\njobs:\n"
                                "  - {id: big, url: 'hf://datasets/acme/big', dest: big/}\n")
            # Warm the fake's tree cache so every measured run pays the same.
            timed([args.bin, "plan", str(manifest), "--format", "json"])
            rows = {}
            rows["plan: resolve (revision + 101 tree pages) and plan"] = [
                timed([args.bin, "plan", str(manifest), "--format", "json"]) for _ in range(args.runs)]
            peer = None
            try:
                import huggingface_hub  # noqa: F401
                peer = "huggingface_hub"
            except ImportError:
                pass
            if peer:
                script = ("import os; from huggingface_hub import HfApi; "
                          "api = HfApi(endpoint=os.environ['HF_ENDPOINT']); "
                          f"sha = api.dataset_info('acme/big', revision='main').sha; "
                          "n = sum(1 for e in api.list_repo_tree('acme/big', repo_type='dataset', revision=sha, recursive=True)); "
                          "print(n)")
                rows[f"peer: huggingface_hub {huggingface_hub.__version__} list_repo_tree (listing only)"] = [
                    timed([sys.executable, "-c", script]) for _ in range(args.runs)]
            pin = timed([args.bin, "pin", str(manifest)])
            before = api_requests(port)
            rows["plan --locked (no listing)"] = [timed([args.bin, "plan", str(manifest), "--locked", "--format", "json"])
                                                  for _ in range(args.runs)]
            rows["run --locked (no listing; every file up to date)"] = [
                timed([args.bin, "run", str(manifest), "--locked", "--progress", "none"]) for _ in range(args.runs)]
            listed_while_locked = api_requests(port) - before
            lines = ["# Sources: a 10,000-file Hub tree", "",
                     f"`bench/sources-bench.py --files {args.files} --runs {args.runs}` on a release build, 2 cores; "
                     f"load when it started: {os.getloadavg()[0]:.2f} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
                     f"A dataset of {args.files:,} small files in the tests' fake Hub (one Python process, 100 files a tree "
                     "page as the Hub pages), on loopback.", "",
                     "| command | wall (median) | peak RSS (largest) |", "|---|---|---|"]
            for label, measured in rows.items():
                lines.append(f"| {label} | {statistics.median(r[0] for r in measured):.2f} s | {max(r[1] for r in measured):.0f} MiB |")
            lines.append(f"| pin (resolve, download {args.files:,} files, ask each mirror) | {pin[0]:.2f} s | {pin[1]:.0f} MiB |")
            lines += ["", f"Listing requests made by the locked commands above: **{listed_while_locked}**.", "",
                      "Goals (issue 49): resolving and planning a 10,000-file tree ≤ 2 s and ≤ 64 MiB; a locked rerun makes "
                      "zero listing requests.", ""]
            text = "\n".join(lines)
            print(text)
            (ROOT / "bench" / "results" / "sources.md").write_text(text)
        finally:
            fake.kill()


if __name__ == "__main__":
    main()
