#!/usr/bin/env bash
# What an install depends on, as one hash: the package's metadata, the build script, the C
# sources of the extensions (the watermark's blend, the mark's pass over the paper, their shared
# header), and the setup script itself. scripts/setup.sh records it in
# .venv/.setup-stamp; scripts/run.sh reinstalls only when it changes.
set -euo pipefail
cd "$(dirname "$0")/.."
cat pyproject.toml setup.py render/kernels/_blend.c render/kernels/_paper.c render/kernels/_chipmask.h scripts/setup.sh \
    | sha256sum | cut -d' ' -f1
