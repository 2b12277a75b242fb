# The two commands of the README, plus helpers. Every target installs what is missing first.
SWIFT ?= swift

.PHONY: deps build release test demo bench schemas help-goldens

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product batchfetch

## Runs the whole test suite (what .ci/run calls).
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

## Builds batchfetch and runs it on examples/quickstart.yaml.
demo: build
	@scripts/demo.sh

## Manifest benchmark: 100,000 jobs, validate + plan on a release build.
bench: release
	bench/manifest-100k.py

schemas:
	scripts/embed-schemas.sh

help-goldens:
	scripts/update-help-goldens.sh
