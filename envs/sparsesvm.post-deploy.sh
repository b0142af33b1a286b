#!/usr/bin/env bash
# Snakemake runs this once in the freshly created conda environment of envs/sparsesvm.yaml:
# install the sparsesvm package of this checkout (no dependencies: the environment has them).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python -m pip install --no-deps --no-build-isolation -e "$repo"
