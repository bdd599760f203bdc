# Carpenter's container image: built on Debian, run on a slim Debian with only the
# runtime libraries, as a non-root user.
#
#   docker build -t carpenter:0.1.0 .
#
# test/chart/test_image.py checks that the runtime stage's package list covers every
# library `ldd build/carpenter` resolves.

ARG DEBIAN_RELEASE=bookworm

FROM debian:${DEBIAN_RELEASE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config git ca-certificates \
      libuv1-dev libcurl4-openssl-dev libyajl-dev libyaml-dev libssl-dev \
      libhttp-parser-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The commit in --version and karpenter_build_info comes from .git when it is in the
# build context ("unknown" otherwise). Tests are not built.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCARP_TESTS=OFF \
 && cmake --build /build --target carpenter -j "$(nproc)" \
 && install -D -m 0755 -s /build/carpenter /out/carpenter \
 && /out/carpenter --version

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
# The runtime libraries of the build stage's -dev packages, one per line (parsed by
# test/chart/test_image.py), and the CA bundle for TLS to the API servers.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates \
      libcurl4 \
      libhttp-parser2.9 \
      libssl3 \
      libuv1 \
      libyajl2 \
      libyaml-0-2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/carpenter /usr/local/bin/carpenter
# 65532: the chart's runAsUser/fsGroup (the "nonroot" user of distroless images).
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/carpenter"]
