#!/usr/bin/env bash
# Compose every corpus model on this (CPU) machine at the checkout's defaults and pack the files into
# .precomposed/c.tgz (git-ignored), for `bench/gpu_session.sh OUT mains-precomposed` on the GPU machine: carry
# [".gpu-bundle", ".precomposed"]. About 140 s on 2 cores; the archive is ~110 KB.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
python -m tilestudio bench ${MODELS:-tests/models/*.py} --no-dry-run --no-validate --out-dir "$tmp/composed" | tail -1
mkdir -p .precomposed
tar czf .precomposed/c.tgz -C "$tmp" composed
rm -rf "$tmp"
ls -la .precomposed/c.tgz
