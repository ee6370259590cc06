# syntax=docker/dockerfile:1
# Drape's server image: draped with the default model inside.
#
#   docker build -t drape:cpu .                              # Debian 12 slim, CPU backend
#   docker build -t drape:cuda --build-arg FLAVOR=cuda .     # CUDA runtime, CUDA backend once kernels/cuda exists
#   docker run -p 8080:8080 drape:cpu
#   docker run -p 8080:8080 -e DRAPE_MAX_BATCH=32 drape:cpu --threads 2 --log-level debug
#   docker run -p 8080:8080 -v $PWD/my.safetensors:/models/my.safetensors:ro \
#              -e DRAPE_MODEL=/models/my.safetensors drape:cpu
#
# Every draped flag has a DRAPE_* variable (`draped --help`); set them with -e
# (or a Kubernetes ConfigMap, deploy/k8s/). SIGTERM drains: new streams get
# 503, frames in flight finish (DRAPE_DRAIN_MS), streams close with 1001, exit 0.
# deploy/README.md has the details; tests/test_deploy.c checks this file.

ARG FLAVOR=cpu
ARG DEBIAN_VERSION=12.8
ARG CUDA_VERSION=12.6.3

# ---- the bases, one pair per flavor (only the selected pair is pulled) ----
FROM debian:${DEBIAN_VERSION} AS build-cpu
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS build-cuda
FROM debian:${DEBIAN_VERSION}-slim AS run-cpu
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu22.04 AS run-cuda

# ---- the default model ----
# The trained bundle the repository carries (models/default.safetensors, made
# by `make model`); a mounted file and DRAPE_MODEL override it at run time.
FROM debian:${DEBIAN_VERSION} AS model
COPY models/default.safetensors /out/default.safetensors

# ---- build: draped and drape with the project's Makefile ----
FROM build-${FLAVOR} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential pkg-config ca-certificates \
      libopenblas-dev libjansson-dev libsuitesparse-dev libmicrohttpd-dev libgnutls28-dev \
      libmsgpack-dev libmeshoptimizer-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY core/ core/
COPY runtime/ runtime/
COPY kernels/ kernels/
COPY sim/ sim/
COPY proto/ proto/
COPY server/ server/
COPY tools/ tools/
COPY deploy/docker/runtime-packages.sh deploy/docker/
# DRAPE_DEPS_OK=1: the packages above are the build's dependencies, so the
# Makefile skips scripts/deps.sh (which installs the test tooling as well).
# With nvcc on the PATH (the CUDA devel base) the Makefile builds the CUDA
# backend too; `make cuda-note` says which.
# The CUDA backend is a plugin (build/libdrape_cuda.so) that the programs
# dlopen from their own folder; /out/plugins holds it (or nothing, on CPU).
RUN make DRAPE_DEPS_OK=1 cuda-note \
 && make DRAPE_DEPS_OK=1 -j"$(nproc)" build/draped build/drape \
 && mkdir -p /out/plugins && if [ -f build/libdrape_cuda.so ]; then cp build/libdrape_cuda.so /out/plugins/; fi \
 && deploy/docker/runtime-packages.sh build/draped build/drape /out/plugins/* > /src/build/runtime-packages.txt

# ---- run ----
FROM run-${FLAVOR} AS run
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /src/build/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl $(cat /tmp/runtime-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && groupadd --system --gid 10001 drape \
 && useradd --system --uid 10001 --gid drape --home-dir /opt/drape --no-create-home --shell /usr/sbin/nologin drape
COPY --from=build /src/build/draped /src/build/drape /usr/local/bin/
COPY --from=build /out/plugins/ /usr/local/bin/
COPY --from=model /out/default.safetensors /opt/drape/models/default.safetensors
# fail the image build, not the first start, if a library is missing
RUN ! ldd /usr/local/bin/draped | grep "not found" \
 && /usr/local/bin/draped --help > /dev/null
WORKDIR /opt/drape
# The model: mount another bundle and point DRAPE_MODEL at it.
# DRAPE_WEB_ROOT: the viewer's files, when an image carries them.
ENV DRAPE_MODEL=/opt/drape/models/default.safetensors \
    DRAPE_PORT=8080 \
    DRAPE_BIND=0.0.0.0 \
    DRAPE_WEB_ROOT=/opt/drape/web \
    OMP_WAIT_POLICY=passive
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD curl -fsS "http://127.0.0.1:${DRAPE_PORT}/healthz" > /dev/null || exit 1
STOPSIGNAL SIGTERM
# Configuration comes from the DRAPE_* environment; arguments after the image
# name are draped flags and win over it (`docker run drape:cpu --help`).
ENTRYPOINT ["/usr/local/bin/draped"]
CMD []
