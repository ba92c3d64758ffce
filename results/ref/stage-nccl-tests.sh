#!/usr/bin/env bash
# Puts nccl-tests' source tree (the reference for qbench's collective
# tables) into .ref/nccl-tests, a folder git ignores, so that it travels to
# the GPU machine with the work tree and is built there; none of its code is
# ever committed here.
#
# Usage: bash results/ref/stage-nccl-tests.sh [GIT_DIR] [REF]
#   GIT_DIR  a clone (bare or not) of NVIDIA/nccl-tests
#            (default: /work/.mirror/NVIDIA+nccl-tests/repo)
#   REF      tag or commit to export (default: v2.19.6, the version qbench
#            was first measured against)
#
# v2.19.6 is commit a0b82b2260cf5152b9f8c061bbf7eaf0ba096432
# ("NCCL_TESTS_VERSION 2.19.6", 2026-07-09). The exported tree gets a file
# QBENCH_REF naming the commit, which the run script prints.
set -euo pipefail
GIT_DIR=${1:-/work/.mirror/NVIDIA+nccl-tests/repo}
REF=${2:-v2.19.6}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST="$ROOT/.ref/nccl-tests"

if ! git -C "$ROOT" check-ignore -q "$DEST"; then
    echo "stage-nccl-tests: $DEST is not ignored by git; refusing to put foreign code there" >&2
    exit 2
fi
commit=$(git --git-dir="$GIT_DIR" rev-parse --verify "$REF^{commit}")
version=$(git --git-dir="$GIT_DIR" show "$commit:src/common.h" | sed -n 's/^#define NCCL_TESTS_VERSION "\(.*\)"/\1/p')
rm -rf "$DEST"
mkdir -p "$DEST"
git --git-dir="$GIT_DIR" archive --format=tar "$commit" | tar -x -C "$DEST"
printf 'repository NVIDIA/nccl-tests\nref %s\ncommit %s\nversion %s\n' "$REF" "$commit" "$version" > "$DEST/QBENCH_REF"
echo "nccl-tests $version ($commit) exported to $DEST"
