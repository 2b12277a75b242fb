#!/usr/bin/env python3
"""Loads an HTML page in headless Chromium (Debian's chromium-headless-shell) with no network,
and prints as JSON what the page logged to the console and how many pixels of each colour its
screenshot has: `html_check.py PAGE.html [--colours 2e7d32,c62828] [--screenshot OUT.png]`.

The console lines come from Chromium's own log (`--enable-logging=stderr`: `CONSOLE` lines for
console.log/error and uncaught exceptions, and Content-Security-Policy violations); the pixels
from the PNG it writes, decoded here with zlib (8-bit RGB or RGBA, not interlaced)."""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def chromium() -> str:
    for name in ["chromium-headless-shell", "chromium", "chromium-browser"]:
        path = shutil.which(name) or (f"/usr/bin/{name}" if os.access(f"/usr/bin/{name}", os.X_OK) else None)
        if path:
            return path
    sys.exit("headless Chromium not found (apt-get install chromium-headless-shell)")


def pixels(png: bytes):
    """(width, height, channels, rows of bytes) of a PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, data, header = 8, b"", None
    while position < len(png):
        length, kind = struct.unpack(">I4s", png[position:position + 8])
        body = png[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            data += body
        position += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(data)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("page")
    parser.add_argument("--colours", default="")
    parser.add_argument("--screenshot")
    parser.add_argument("--size", default="1100,900")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        shot = args.screenshot or os.path.join(work, "page.png")
        result = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={work}/profile",
             "--enable-logging=stderr", "--v=0", f"--window-size={args.size}", f"--screenshot={shot}",
             "file://" + os.path.abspath(args.page)],
            capture_output=True, text=True, timeout=120)
        console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line or "Content Security Policy" in line]
        counts = {}
        if os.path.exists(shot):
            width, height, channels, rows = pixels(open(shot, "rb").read())
            wanted = {c: tuple(int(c[i:i + 2], 16) for i in (0, 2, 4)) for c in args.colours.split(",") if c}
            counts = {c: 0 for c in wanted}
            for row in rows:
                for x in range(0, width * channels, channels):
                    rgb = (row[x], row[x + 1], row[x + 2])
                    for name, colour in wanted.items():
                        if all(abs(a - b) <= 8 for a, b in zip(rgb, colour)):
                            counts[name] += 1
        print(json.dumps({"exit": result.returncode, "console": console, "screenshot": os.path.exists(shot), "pixels": counts}))


if __name__ == "__main__":
    main()
