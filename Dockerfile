# vaultd's container image (docs/deployment.md). Two stages on the same Debian bookworm base:
# the build stage compiles the watermark's C extensions into a virtual environment; the runtime
# stage copies that environment, with Debian's python3 and no compiler.
#   docker build -t vaultd .                       (BASE_IMAGE: debian:bookworm-slim)
#   scripts/build-base-image.sh && docker build --build-arg BASE_IMAGE=vaultd-base:bookworm-slim -t vaultd .
# The render sandbox needs docker run options: see docs/deployment.md, "One container".
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
LABEL vaultd.stage=build
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      python3 python3-venv python3-dev gcc libc6-dev ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/vaultd/venv
# Where pip finds packages: PyPI by default. Offline, or behind a TLS-inspecting proxy whose
# CA the image must not carry, fetch the wheels on the host into build/wheels and pass
# --build-arg PIP_OPTIONS="--no-index --find-links /src/wheels" (scripts/container-test.sh).
ARG PIP_OPTIONS=""
# Dependencies first, in a layer of their own: a source change then reuses it.
COPY pyproject.toml setup.py README.md /src/
# build/wheel[s] is copied when present; README.md beside it keeps the COPY valid without it.
COPY README.md build/wheel[s] /src/wheels/
# The storage backends' SDKs: each registered backend's extra (backends.BUILT_IN), read by the
# registry's own stdlib-only module, copied alone so that a source change keeps this layer.
COPY backends/__init__.py backends/base.py backends/requirements.py /src/backends/
RUN cd /src && /opt/vaultd/venv/bin/python -m backends.requirements pyproject.toml > /tmp/requirements.txt \
 && /opt/vaultd/venv/bin/pip install -q --no-cache-dir --disable-pip-version-check $PIP_OPTIONS \
      -r /tmp/requirements.txt
COPY vaultd /src/vaultd
COPY backends /src/backends
COPY render /src/render
COPY admin_cli /src/admin_cli
RUN /opt/vaultd/venv/bin/pip install -q --no-cache-dir --disable-pip-version-check $PIP_OPTIONS \
      --no-deps /src \
 && /opt/vaultd/venv/bin/python -c "import render.kernels._blend, render.kernels._paper"

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title=vaultd \
      org.opencontainers.image.licenses=Apache-2.0 \
      vaultd.stage=runtime
# libseccomp2: the workers' seccomp filter; fonts: the watermark.
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      python3 libseccomp2 fonts-dejavu-core fonts-droid-fallback ca-certificates \
 && rm -rf /var/lib/apt/lists/* /usr/share/doc/* /usr/share/man/*
RUN useradd --system --uid 10001 --user-group --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin vaultd \
 && mkdir -m 0700 /data && chown vaultd:vaultd /data
COPY --from=build /opt/vaultd/venv /opt/vaultd/venv
ENV PATH=/opt/vaultd/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    VAULTD_DATA_DIR=/data \
    VAULTD_HOST=0.0.0.0 \
    VAULTD_PORT=8080
USER vaultd
WORKDIR /data
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD python3 -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('VAULTD_PORT', '8080'), timeout=4)"
ENTRYPOINT ["vaultd"]
