# batchfetch in a container (Docs/Releases.md). Not built by this repository's CI (no Docker
# engine there); its names follow `make dist`.
#
#   docker build -t batchfetch .
#   docker run --rm -v "$PWD:/work" -w /work batchfetch run manifest.yaml
#
# The build stage makes the release files exactly as `make dist` does on a developer's machine;
# the runtime stage is a plain Debian 12 that installs the .deb, so the image holds nothing of
# the toolchain and exactly the libraries the package declares.
FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      git make libyaml-dev libarchive-dev libsqlite3-dev libsodium-dev dpkg-dev file \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make dist

FROM debian:bookworm-slim
COPY --from=build /src/dist/*.deb /tmp/
RUN apt-get update \
    && apt-get install -y --no-install-recommends /tmp/batchfetch_*.deb ca-certificates \
    && rm -rf /var/lib/apt/lists/* /tmp/batchfetch_*.deb
WORKDIR /work
ENTRYPOINT ["batchfetch"]
CMD ["--help"]
