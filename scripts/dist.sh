#!/usr/bin/env bash
# `make dist`: a batchfetch that runs where no Swift toolchain is (Docs/Releases.md).
#
# Builds the release binary with the Swift standard library and Foundation linked statically
# (--static-swift-stdlib), stripped, with the commit it was built from, and writes into dist/:
#   batchfetch-VERSION-linux-ARCH.tar.gz  batchfetch-VERSION/{bin,share}, README.md, LICENSE,
#                                         DEPENDENCIES (the Debian packages it needs, one a line)
#   batchfetch_VERSION-1_ARCH.deb         the same files under /usr; Depends: from dpkg-shlibdeps
#   SHA256SUMS                            of both
# Two runs of one commit in one checkout write byte-identical files: every timestamp is the
# commit's (SOURCE_DATE_EPOCH), owners are root, entries are sorted, gzip stores no name or time;
# the source paths compiled in are mapped to /batchfetch.
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(cat VERSION)"
arch="$(dpkg --print-architecture)"
commit="$(git rev-parse HEAD)"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
scratch=.build-dist/build
name="batchfetch-$version"
work="$(mktemp -d)"
commit_file=Sources/BatchFetchSpec/BuildCommit.swift
cp "$commit_file" "$work/BuildCommit.swift"
restore() {
  cp "$work/BuildCommit.swift" "$commit_file"
  rm -rf "$work"
}
trap restore EXIT

# The commit into the binary (ToolVersion.commit), for this build only. A tree with changes
# that are not committed says so, so that no such binary passes for the commit.
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then commit="$commit-modified"; fi
printf '// Written by scripts/dist.sh for a release build; restored afterwards.\n// Keep it one line.\nlet buildCommit: String? = "%s"\n' "$commit" > "$commit_file"

# Source paths compiled in (#filePath, __FILE__) are mapped to /batchfetch, so that where the
# checkout lies does not change the binary.
swift build -c release --product batchfetch --static-swift-stdlib --scratch-path "$scratch" \
  -Xswiftc -file-prefix-map -Xswiftc "$PWD=/batchfetch" -Xcc "-ffile-prefix-map=$PWD=/batchfetch"
binary="$scratch/release/batchfetch"
cp "$work/BuildCommit.swift" "$commit_file"
# generate-manual runs here only (it writes the man pages): a debug build is enough.
swift build --product generate-manual
manual_tool="$(swift build --show-bin-path)/generate-manual"

# Nothing of the toolchain may be needed at run time.
if ldd "$binary" | grep -q -e swift -e "not found"; then
  echo "dist: the binary still needs the toolchain's libraries:" >&2
  ldd "$binary" >&2
  exit 1
fi
# Its RUNPATH may name the binary's own directory and nothing else (never the toolchain's).
if readelf -d "$binary" | grep -E "RUNPATH|RPATH" | grep -v -q -F '[$ORIGIN]'; then
  echo "dist: the binary's RUNPATH names more than \$ORIGIN:" >&2
  readelf -d "$binary" | grep -E "RUNPATH|RPATH" >&2
  exit 1
fi
strip --strip-all -o "$work/batchfetch" "$binary"

# The tree both archives hold, laid out as `make install` lays it out.
stage="$work/stage"
PREFIX=/usr DESTDIR="$stage" scripts/install.sh --binary "$work/batchfetch" --generate-manual "$manual_tool" >/dev/null

# Dependencies: what the binary's own shared libraries come from (dpkg-shlibdeps reads
# debian/control for nothing but its existence and the package name).
mkdir -p "$work/shlibs/debian" "$work/shlibs/usr/bin"
printf 'Source: batchfetch\n\nPackage: batchfetch\nArchitecture: any\n' > "$work/shlibs/debian/control"
cp "$work/batchfetch" "$work/shlibs/usr/bin/batchfetch"
depends="$(cd "$work/shlibs" && dpkg-shlibdeps -O usr/bin/batchfetch 2>/dev/null | sed -n 's/^shlibs:Depends=//p')"
[ -n "$depends" ] || { echo "dist: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

rm -rf dist
mkdir -p dist

# The tarball.
tree="$work/tar/$name"
mkdir -p "$tree"
cp -a "$stage/usr/bin" "$stage/usr/share" "$tree/"
cp README.md LICENSE "$tree/"
echo "$depends" | tr ',' '\n' | sed -e 's/^ *//' -e 's/ .*//' | sort -u > "$tree/DEPENDENCIES"
find "$work/tar" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
tarball="dist/$name-linux-$arch.tar.gz"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  -C "$work/tar" -cf - "$name" | gzip -n -9 > "$tarball"

# The Debian package.
mkdir -p "$stage/DEBIAN" "$stage/usr/share/doc/batchfetch"
cp LICENSE "$stage/usr/share/doc/batchfetch/copyright"
# Apparent sizes: allocated blocks vary with when the kernel writes the file back.
size_kib="$(du -sk --apparent-size --exclude=DEBIAN "$stage" | cut -f1)"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: batchfetch
Version: $version-1
Architecture: $arch
Maintainer: batchfetch developers <batchfetch@localhost>
Installed-Size: $size_kib
Depends: $depends
Suggests: gpgv, openssh-client
Section: net
Priority: optional
Homepage: https://github.com/batchfetch/batchfetch
Description: declarative batch downloads with resumption, checksums and mirrors
 batchfetch reads a YAML manifest of URLs, destinations, sizes, checksums, mirrors and
 dependencies, downloads them resumably and verifies and publishes every file atomically,
 then writes a JSON report. Built from commit $commit.
CONTROL
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
deb="dist/batchfetch_$version-1_$arch.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null

(cd dist && sha256sum "$(basename "$tarball")" "$(basename "$deb")" > SHA256SUMS)
echo "dist: $(cd dist && ls -s --block-size=K "$(basename "$tarball")" "$(basename "$deb")" | tr '\n' ' ')(commit $commit)"
