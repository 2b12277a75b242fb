#!/usr/bin/env python3
"""Builds the archives of the extraction tests, hostile ones included, with Python's tarfile and
zipfile (which write any header asked of them). Usage: make-archive.py CASE OUTPUT.

Cases:
  reference-tar / reference-zip   a normal tree: nested dirs, an empty dir, unicode names, an
                                  in-tree relative symlink, a hard link (tar), modes 0644/0755/0600,
                                  a setuid file, fixed mtimes
  traversal, absolute, backslash-zip, backslash-zip-utf8, symlink-escape, symlink-dot-climb, symlink-absolute, symlink-then-through,
  hardlink-escape, hardlink-outside, device, fifo, duplicate-types, bomb (20 MiB of zeros),
  many-entries (5,000 empty files), many-files-old / many-files-new (6,000 files), stream (8 MiB), truncated, corrupt, not-an-archive, single-gz
"""
import gzip, io, os, sys, tarfile, time, zipfile

MTIME = 1_600_000_000


def tar_add(tar, name, data=b"", mode=0o644, kind=tarfile.REGTYPE, link=None, mtime=MTIME):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = mtime
    if link is not None:
        info.linkname = link
    if kind == tarfile.REGTYPE:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    else:
        tar.addfile(info)


def tar_of(entries, path, compression="gz"):
    mode = "w:" + compression if compression else "w"
    with tarfile.open(path, mode, format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            tar_add(tar, *entry[:1], **entry[1])


def reference_entries():
    return [
        ("data", dict(kind=tarfile.DIRTYPE, mode=0o755)),
        ("data/a.txt", dict(data=b"alpha\n")),
        ("data/exec.sh", dict(data=b"#!/bin/sh\necho hi\n", mode=0o755)),
        ("data/private.key", dict(data=b"secret\n", mode=0o600)),
        ("data/setuid", dict(data=b"suid\n", mode=0o4755)),
        ("data/sub", dict(kind=tarfile.DIRTYPE, mode=0o750)),
        ("data/sub/b.bin", dict(data=bytes(range(256)) * 40)),
        ("data/empty", dict(kind=tarfile.DIRTYPE, mode=0o755)),
        ("data/ünïcødé – 名前.txt", dict(data="ünïcødé\n".encode())),
        ("data/link-to-a", dict(kind=tarfile.SYMTYPE, link="a.txt", mode=0o777)),
        ("data/sub/up-link", dict(kind=tarfile.SYMTYPE, link="../a.txt", mode=0o777)),
        ("data/hard-a", dict(kind=tarfile.LNKTYPE, link="data/a.txt")),
    ]


def zip_of(entries, path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=time.gmtime(MTIME)[:6])
            info.external_attr = (mode & 0xFFFF) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)


def main(case, out):
    if case == "reference-tar":
        tar_of(reference_entries(), out)
    elif case == "reference-tar-zst":
        raw = out + ".tar"
        tar_of(reference_entries(), raw, compression="")
        os.system(f"zstd -q -f -o '{out}' '{raw}' && rm -f '{raw}'")
    elif case == "reference-zip":
        zip_of([
            ("data/", b"", 0o40755),
            ("data/a.txt", b"alpha\n", 0o100644),
            ("data/exec.sh", b"#!/bin/sh\necho hi\n", 0o100755),
            ("data/sub/", b"", 0o40750),
            ("data/sub/b.bin", bytes(range(256)) * 40, 0o100644),
            ("data/empty/", b"", 0o40755),
            ("data/ünïcødé – 名前.txt", "ünïcødé\n".encode(), 0o100644),
        ], out)
    elif case == "traversal":
        tar_of([("ok.txt", dict(data=b"ok")), ("../evil.txt", dict(data=b"evil"))], out)
    elif case == "absolute":
        tar_of([("/tmp/batchfetch-evil.txt", dict(data=b"evil"))], out)
    elif case == "backslash-zip":
        # libarchive (as unzip) reads '\\' as '/' in a name without the UTF-8 flag: a climb.
        zip_of([("ok.txt", b"ok", 0o100644), ("..\\evil.txt", b"evil", 0o100644)], out)
    elif case == "backslash-zip-utf8":
        # A UTF-8 name with a '\\': libarchive and bsdtar read it as a separator, unzip keeps it.
        zip_of([("ok.txt", b"ok", 0o100644), ("sub\\évil.txt", b"evil", 0o100644)], out)
    elif case == "symlink-escape":
        tar_of([("up", dict(kind=tarfile.SYMTYPE, link="../../outside"))], out)
    elif case == "symlink-absolute":
        tar_of([("etc", dict(kind=tarfile.SYMTYPE, link="/etc"))], out)
    elif case == "symlink-then-through":
        # An in-tree link to a directory, then an entry through it: refused even though the
        # link itself stays inside (a writer that followed it could be led anywhere).
        tar_of([("d", dict(kind=tarfile.DIRTYPE, mode=0o755)), ("l", dict(kind=tarfile.SYMTYPE, link="d")),
                ("l/evil.txt", dict(data=b"evil"))], out)
    elif case == "symlink-dot-climb":
        tar_of([("a", dict(kind=tarfile.SYMTYPE, link=".")), ("b", dict(kind=tarfile.SYMTYPE, link="a/a/../.."))], out)
    elif case == "hardlink-escape":
        tar_of([("h", dict(kind=tarfile.LNKTYPE, link="../outside.txt"))], out)
    elif case == "hardlink-outside":
        tar_of([("h", dict(kind=tarfile.LNKTYPE, link="/etc/passwd"))], out)
    elif case == "device":
        tar_of([("dev", dict(kind=tarfile.CHRTYPE))], out)
    elif case == "fifo":
        tar_of([("pipe", dict(kind=tarfile.FIFOTYPE))], out)
    elif case == "duplicate-types":
        tar_of([("x", dict(kind=tarfile.DIRTYPE, mode=0o755)), ("x", dict(data=b"file"))], out)
    elif case == "bomb":
        tar_of([("zeros.bin", dict(data=bytes(20 << 20)))], out)
    elif case == "many-entries":
        tar_of([(f"f{i:05d}", dict(data=b"")) for i in range(5000)], out)
    elif case in ("many-files-old", "many-files-new"):
        # 6,000 small files in 60 directories: long enough to unpack that a kill lands inside.
        tag = case.split("-")[-1].encode()
        entries = [(f"d{i // 100:03d}/f{i:05d}.txt", dict(data=tag + b" %d\n" % i * 40)) for i in range(6000)]
        if tag == b"new":
            entries.append(("NEW", dict(data=b"the new tree\n")))
        tar_of(entries, out)
    elif case == "stream":
        # 8 MiB of incompressible files: the origin holds the last part back while a test looks
        # at the tree being unpacked from the first.
        tar_of([(f"s/f{i:03d}.bin", dict(data=os.urandom(64 << 10))) for i in range(128)], out)
    elif case in ("truncated", "corrupt"):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for i in range(20):
                tar_add(tar, f"f{i}.bin", data=os.urandom(20000))
        data = bytearray(buffer.getvalue())
        if case == "truncated":
            data = data[: len(data) // 2]
        else:
            for i in range(10, 74):  # the first deflate block's header and data
                data[i] ^= 0x5A
        open(out, "wb").write(bytes(data))
    elif case == "not-an-archive":
        open(out, "wb").write(b"just some text, not an archive\n" * 10)
    elif case == "single-gz":
        open(out, "wb").write(gzip.compress(b"line\n" * 1000, mtime=MTIME))
    else:
        sys.exit(f"unknown case {case}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
