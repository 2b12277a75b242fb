# The two commands of the README, plus helpers. Every target installs what is missing first.
SWIFT ?= swift
PREFIX ?= /usr/local
DESTDIR ?=
## `make install CONFIGURATION=debug` installs the debug build (CI checks the install with it).
CONFIGURATION ?= release

.PHONY: deps build release test slurm-test fuzz demo bench schemas help-goldens install dist dist-check

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product batchfetch

## Runs the whole test suite (what .ci/run calls), once per transport: URLSession, then nio;
## then sharded runs on a real Slurm cluster (needs root: scripts/slurm-test.sh); then fuzzes
## the manifest loader for a minute (scripts/fuzz.sh).
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) build --product generate-manual
	$(SWIFT) test
	BATCHFETCH_TRANSPORT=nio $(SWIFT) test --skip-build
	scripts/slurm-test.sh
	scripts/fuzz.sh 60

## Installs the binary, bash/zsh/fish completions and man pages under $(DESTDIR)$(PREFIX)
## (scripts/install.sh), all generated from the command definitions.
install: deps
	$(SWIFT) build -c $(CONFIGURATION) --product batchfetch
	$(SWIFT) build -c $(CONFIGURATION) --product generate-manual
	PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" scripts/install.sh --binary .build/$(CONFIGURATION)/batchfetch

## The release files in dist/: a static, stripped binary as a tarball and a .deb, and SHA256SUMS
## (scripts/dist.sh; Docs/Releases.md). Byte-identical for one commit in one checkout.
dist: deps
	@scripts/install-deps.sh --dist
	scripts/dist.sh

## Proves dist/ in a minimal Debian 12 without Swift (root; scripts/dist-check.sh): install,
## --version, a real run, man page, completion. Not part of `make test`.
dist-check: dist
	scripts/dist-check.sh

## Sharded runs on a real single-node Slurm cluster (root; part of `make test`).
slurm-test: deps
	$(SWIFT) build --product batchfetch
	scripts/slurm-test.sh

## Fuzzes the manifest loader for SECONDS (default 600).
fuzz:
	scripts/fuzz.sh $(or $(SECONDS),600)

## Builds batchfetch and runs it on examples/quickstart.yaml.
demo: build
	@scripts/demo.sh

## Benchmarks on a release build: 100,000- and 1,000,000-job manifests and sharding; downloads
## against curl, wget, aria2c (also a capped mirror and per-request latency); peak RSS and bytes
## against misbehaving servers; a 2 GiB upload against curl -T.
bench: release
	@scripts/install-deps.sh --bench
	$(SWIFT) build -c release --product batchfetch-test-origin
	bench/manifest-100k.py
	bench/shard-bench.py
	bench/download-bench.py
	bench/download-bench.py --scenarios capped
	bench/download-bench.py --scenarios latency
	bench/hostile-bench.py
	bench/upload-bench.py
	bench/scale-bench.py
	bench/cache-bench.py
	bench/archive-bench.py
	bench/bucket-bench.py
	bench/sources-bench.py
	bench/urlsession-probe.sh

schemas:
	scripts/embed-schemas.sh

help-goldens:
	scripts/update-help-goldens.sh
