#!/usr/bin/env bash
# Installs what batchfetch needs on a fresh Debian/Ubuntu machine, and nothing that is already
# there: libyaml, libarchive and libsodium (headers + pkg-config files) to build; for the tests, nginx-light and lighttpd (real
# servers of the interop tests, beside python3's http.server), caddy, openssl (the TLS tests' throwaway
# CA), promtool (prometheus), slurm-wlm (the sharding test's cluster) and Python's jsonschema, PyYAML, python-multipart,
# moto and boto3. With --bench, also the peers the benchmarks compare against: curl, wget and
# aria2c, and GNU time (peak RSS). Needs root (or sudo) only when something is missing.
set -euo pipefail

missing_apt=()
pkg-config --exists yaml-0.1 2>/dev/null || missing_apt+=(libyaml-dev pkg-config)
# SQLite for the state store (GRDB links the system library; sqlite3 to inspect it).
pkg-config --exists sqlite3 2>/dev/null || missing_apt+=(libsqlite3-dev)
# libarchive reads the archives `extract:` unpacks; bsdtar (libarchive-tools), GNU tar, unzip,
# zstd, xz and bzip2 are the references the archive tests compare extracted trees with.
pkg-config --exists libarchive 2>/dev/null || missing_apt+=(libarchive-dev)
# libsodium: BLAKE2b-512 for minisign's prehashed signatures (Docs/Signatures.md).
pkg-config --exists libsodium 2>/dev/null || missing_apt+=(libsodium-dev)
# The reference tools of signed checksum files: gpgv and ssh-keygen check them at run time;
# minisign, signify-openbsd, gpg and ssh-keygen make the tests' keys and signatures.
command -v gpgv >/dev/null || missing_apt+=(gpgv)
command -v gpg >/dev/null || missing_apt+=(gnupg)
command -v ssh-keygen >/dev/null || missing_apt+=(openssh-client)
command -v minisign >/dev/null || missing_apt+=(minisign)
command -v signify-openbsd >/dev/null || missing_apt+=(signify-openbsd)
command -v bsdtar >/dev/null || missing_apt+=(libarchive-tools)
command -v unzip >/dev/null || missing_apt+=(unzip)
command -v zstd >/dev/null || missing_apt+=(zstd)
command -v xz >/dev/null || missing_apt+=(xz-utils)
command -v bzip2 >/dev/null || missing_apt+=(bzip2)
command -v sqlite3 >/dev/null || missing_apt+=(sqlite3)
command -v python3 >/dev/null || missing_apt+=(python3 python3-pip)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || missing_apt+=(nginx-light)
[ -x /usr/sbin/lighttpd ] || command -v lighttpd >/dev/null || missing_apt+=(lighttpd)
# caddy: the real server of the interop tests whose quirks broke batchfetch once (416 for an
# empty file's range); started by the tests on a free port, never as a service.
command -v caddy >/dev/null || missing_apt+=(caddy)
command -v openssl >/dev/null || missing_apt+=(openssl)
# A real single-node Slurm cluster for scripts/slurm-test.sh (sharded runs on a job array).
command -v sbatch >/dev/null || missing_apt+=(slurm-wlm)
# promtool (Debian's prometheus package) checks every metrics file the --metrics tests write.
command -v promtool >/dev/null || missing_apt+=(prometheus)
# man renders the installed pages in the install test (`man -l`).
command -v man >/dev/null || missing_apt+=(man-db)
# Headless Chromium loads `batchfetch report --format html` pages in the report tests.
command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null || missing_apt+=(chromium-headless-shell)
if [ "${1:-}" = "--dist" ]; then
  # `make dist`: the static Foundation links libcurl and libxml2 (their .so links), and
  # dpkg-shlibdeps and dpkg-deb make the package; `make dist-check`: debootstrap, GNU time.
  [ -e "$(gcc -print-file-name=libcurl.so 2>/dev/null)" ] && [ "$(gcc -print-file-name=libcurl.so)" != libcurl.so ] \
    || missing_apt+=(libcurl4-openssl-dev)
  pkg-config --exists libxml-2.0 2>/dev/null || missing_apt+=(libxml2-dev)
  command -v dpkg-shlibdeps >/dev/null || missing_apt+=(dpkg-dev)
  command -v debootstrap >/dev/null || missing_apt+=(debootstrap)
  [ -x /usr/bin/time ] || missing_apt+=(time)
fi
if [ "${1:-}" = "--bench" ]; then
  command -v curl >/dev/null || missing_apt+=(curl)
  command -v wget >/dev/null || missing_apt+=(wget)
  command -v aria2c >/dev/null || missing_apt+=(aria2)
  [ -x /usr/bin/time ] || missing_apt+=(time)  # GNU time: the benchmarks' peak RSS
fi

if [ ${#missing_apt[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null; then
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    echo "installing: ${missing_apt[*]}"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing_apt[@]}" >/dev/null
  else
    echo "please install libyaml (e.g. 'brew install libyaml pkg-config') and python3" >&2
    exit 1
  fi
fi

# huggingface_hub: the peer of bench/sources-bench.py (its own tree listing against the fake Hub).
if [ "${1:-}" = "--bench" ] && ! python3 -c "import huggingface_hub" 2>/dev/null; then
  python3 -m pip install --quiet huggingface_hub 2>/dev/null || python3 -m pip install --quiet --break-system-packages huggingface_hub
fi

# jsonschema and PyYAML check the schemas; python-multipart parses the forms batchfetch uploads;
# moto (with its server) and boto3 are the S3 API of the upload tests.
if ! python3 -c "import jsonschema, yaml, python_multipart, moto.server, boto3" 2>/dev/null; then
  packages=(jsonschema pyyaml python-multipart "moto[server]" boto3)
  echo "installing Python packages: ${packages[*]}"
  python3 -m pip install --quiet "${packages[@]}" 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages "${packages[@]}"
fi
