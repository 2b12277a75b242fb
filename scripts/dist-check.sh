#!/usr/bin/env bash
# `make dist-check`: proves that dist/ runs where no Swift is (Docs/Releases.md). As root.
#
# A minimal Debian 12 (`debootstrap --variant=minbase`, kept in .build-dist/bookworm between
# runs) is copied afresh for each check. In one copy `apt-get install ./batchfetch_*.deb` must
# pull the package's declared dependencies and nothing they do not need; in another the tarball
# is unpacked after installing what its DEPENDENCIES lists. In each: `batchfetch --version`
# (timed), a real `run` against an origin on loopback started outside the chroot (the chroot
# shares the network), the man page read by `man`, and bash loading the completion. The figures
# go to stdout for bench/results/releases.md.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "dist-check: needs root (debootstrap, chroot)" >&2; exit 1; }
version="$(cat VERSION)"
arch="$(dpkg --print-architecture)"
deb="dist/batchfetch_$version-1_$arch.deb"
tarball="dist/batchfetch-$version-linux-$arch.tar.gz"
for file in "$deb" "$tarball"; do
  [ -f "$file" ] || { echo "dist-check: $file is missing (make dist)" >&2; exit 1; }
done
(cd dist && sha256sum --quiet -c SHA256SUMS)
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

base=.build-dist/bookworm
if [ ! -f "$base/.complete" ]; then
  rm -rf "$base.tmp"
  debootstrap --variant=minbase bookworm "$base.tmp" "$mirror" >/dev/null
  rm -rf "$base"
  mv "$base.tmp" "$base"
  touch "$base/.complete"
fi
if chroot "$base" sh -c 'command -v swift || ls /usr/lib/swift' >/dev/null 2>&1; then
  echo "dist-check: the base system has Swift in it" >&2; exit 1
fi

work="$(mktemp -d /tmp/batchfetch-dist-check.XXXXXX)"
origin_pid=""
cleanup() {
  [ -n "$origin_pid" ] && kill "$origin_pid" 2>/dev/null || true
  for root in "$work"/root-*; do
    [ -d "$root" ] || continue
    umount "$root/proc" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# The origin, outside: a 1 MiB file and its sha256.
mkdir -p "$work/www"
head -c 1048576 /dev/urandom > "$work/www/data.bin"
sha256="$(sha256sum "$work/www/data.bin" | cut -d' ' -f1)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/www" >/dev/null 2>&1 &
origin_pid=$!
for _ in $(seq 50); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/data.bin')" 2>/dev/null && break; sleep 0.1; done

fresh_root() {
  local root="$work/root-$1"
  cp -a "$base" "$root"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc"
  echo "$root"
}

# A clean environment inside; apt and debconf ask nothing and say nothing.
in_root() {
  chroot "$1" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive "${@:2}"
}
# apt-get inside, its chatter kept in a log that is shown when it fails.
apt_in() {
  in_root "$1" apt-get -y -qq -o Dpkg::Use-Pty=0 "${@:2}" >"$work/apt.log" 2>&1 \
    || { cat "$work/apt.log" >&2; return 1; }
}

# What the installed binary must do, in `root`; `label` names the check in the figures.
exercise() {
  local root="$1" label="$2"
  in_root "$root" batchfetch --version | grep -q "^$version (commit [0-9a-f]\{40\}" \
    || { echo "dist-check: $label: --version does not name $version and a commit" >&2; exit 1; }
  # The fastest of five: what a cron job pays to start it.
  local best=""
  for _ in 1 2 3 4 5; do
    local start end ms
    start=$(date +%s%N); in_root "$root" batchfetch --version >/dev/null; end=$(date +%s%N)
    ms=$(( (end - start) / 1000000 ))
    if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then best=$ms; fi
  done
  mkdir -p "$root/work"
  cat > "$root/work/m.yaml" <<MANIFEST
version: 1
output_dir: /work/out
jobs:
  - {id: data, url: "http://127.0.0.1:$port/data.bin", size: 1048576, checksum: "sha256:$sha256"}
MANIFEST
  /usr/bin/time -f '%M' -o "$work/rss-$label" chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root \
    batchfetch run /work/m.yaml --progress none >/dev/null 2>"$root/work/run.err"
  local rss
  rss="$(tail -1 "$work/rss-$label")"
  [ "$(sha256sum "$root/work/out/data.bin" | cut -d' ' -f1)" = "$sha256" ] \
    || { echo "dist-check: $label: the run did not fetch the file" >&2; cat "$root/work/run.err" >&2; exit 1; }
  in_root "$root" bash -c 'source /usr/share/bash-completion/completions/batchfetch && complete -p batchfetch' >/dev/null \
    || { echo "dist-check: $label: bash does not load the completion" >&2; exit 1; }
  apt_in "$root" install --no-install-recommends man-db
  in_root "$root" man -P cat batchfetch.run 2>/dev/null | grep -q "batchfetch" \
    || { echo "dist-check: $label: man batchfetch.run shows nothing" >&2; exit 1; }
  echo "$label: --version ${best} ms (fastest of 5); a 1 MiB run: peak RSS ${rss} KiB"
}

# The package: its declared dependencies and what they need, nothing else.
root="$(fresh_root deb)"
apt_in "$root" update
before="$(in_root "$root" dpkg-query -W -f '${Package}\n' | sort)"
cp "$deb" "$root/tmp/"
apt_in "$root" install --no-install-recommends "/tmp/$(basename "$deb")"
after="$(in_root "$root" dpkg-query -W -f '${Package}\n' | sort)"
added="$(comm -13 <(echo "$before") <(echo "$after") | grep -v '^batchfetch$' || true)"
declared="$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed -e 's/^ *//' -e 's/ .*//' | sort -u)"
closure="$(in_root "$root" apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances $declared | grep -v '^ ' | sed 's/^<\(.*\)>$/\1/' | sort -u)"
stray="$(comm -23 <(echo "$added") <(echo "$closure") || true)"
[ -z "$stray" ] || { echo "dist-check: installing the .deb pulled packages it does not declare: $stray" >&2; exit 1; }
if in_root "$root" ldd /usr/bin/batchfetch | grep -e "not found" -e swift; then
  echo "dist-check: the installed binary needs a library the system lacks" >&2; exit 1
fi
echo "deb: Depends: $(echo $declared); installed besides batchfetch: $(echo $added)"
exercise "$root" deb

# The tarball, after what DEPENDENCIES lists.
root="$(fresh_root tar)"
tar -xzf "$tarball" -C "$root/opt"
apt_in "$root" update
apt_in "$root" install --no-install-recommends $(cat "$root/opt/batchfetch-$version/DEPENDENCIES")
ln -s "/opt/batchfetch-$version/bin/batchfetch" "$root/usr/local/bin/batchfetch"
mkdir -p "$root/usr/share/bash-completion/completions" "$root/usr/local/share/man/man1"
cp "$root/opt/batchfetch-$version/share/bash-completion/completions/batchfetch" "$root/usr/share/bash-completion/completions/"
cp "$root/opt/batchfetch-$version/share/man/man1/"*.1 "$root/usr/local/share/man/man1/"
exercise "$root" tarball
echo "sizes: $(stat -c '%n %s bytes' "$tarball" "$deb" | tr '\n' ';')"

# The same run by the dynamic release build on this machine, for the memory goal.
dynamic="${DYNAMIC_BINARY:-.build-release/release/batchfetch}"
if [ -x "$dynamic" ]; then
  mkdir -p "$work/dynamic"
  sed "s#/work/out#$work/dynamic/out#" "$root/work/m.yaml" > "$work/dynamic/m.yaml"
  /usr/bin/time -f '%M' -o "$work/rss-dynamic" "$dynamic" run "$work/dynamic/m.yaml" --progress none >/dev/null 2>&1
  echo "dynamic build ($dynamic), the same run on the host: peak RSS $(tail -1 "$work/rss-dynamic") KiB"
fi
