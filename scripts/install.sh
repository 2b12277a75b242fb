#!/usr/bin/env bash
# Installs batchfetch like a Unix tool (`make install`): the binary, bash/zsh/fish completions
# and man pages, all generated from the command definitions (swift-argument-parser's completion
# scripts and its generate-manual tool), under DESTDIR/PREFIX.
#
#   scripts/install.sh [--binary PATH] [--generate-manual PATH]
#
# PREFIX (default /usr/local) and DESTDIR (default empty) come from the environment, as make
# passes them. --binary defaults to .build/release/batchfetch; --generate-manual to the tool
# that `swift build --product generate-manual` makes beside it.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=.build/release/batchfetch
manual_tool=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --generate-manual) manual_tool="$2"; shift 2 ;;
    *) echo "install.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$manual_tool" ] || manual_tool="$(dirname "$binary")/generate-manual"
for tool in "$binary" "$manual_tool"; do
  if [ ! -x "$tool" ]; then
    echo "install.sh: $tool is missing (make install builds it)" >&2
    exit 1
  fi
done

prefix="${PREFIX:-/usr/local}"
root="${DESTDIR:-}${prefix}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Everything is generated first, so a failure installs nothing.
"$binary" --generate-completion-script bash > "$work/batchfetch.bash"
"$binary" --generate-completion-script zsh > "$work/_batchfetch"
"$binary" --generate-completion-script fish > "$work/batchfetch.fish"
mkdir -p "$work/man"
# One page for the tool and one per subcommand (batchfetch-run.1, ...); the date is the last
# commit's, so two installs of one commit write identical pages.
date="$(git log -1 --format=%cs 2>/dev/null || date -u +%Y-%m-%d)"
"$manual_tool" "$binary" --multi-page --date "$date" -o "$work/man" >/dev/null

install -d "$root/bin" "$root/share/bash-completion/completions" "$root/share/zsh/site-functions" \
  "$root/share/fish/vendor_completions.d" "$root/share/man/man1"
install -m 0755 "$binary" "$root/bin/batchfetch"
install -m 0644 "$work/batchfetch.bash" "$root/share/bash-completion/completions/batchfetch"
install -m 0644 "$work/_batchfetch" "$root/share/zsh/site-functions/_batchfetch"
install -m 0644 "$work/batchfetch.fish" "$root/share/fish/vendor_completions.d/batchfetch.fish"
install -m 0644 "$work"/man/*.1 "$root/share/man/man1/"
echo "installed batchfetch in $root (bin, completions, $(ls "$work"/man | wc -l) man pages)"
