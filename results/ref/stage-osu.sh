#!/usr/bin/env bash
# Puts OSU Micro-Benchmarks 7.4's source tree (the reference for qbench's
# osu_* subcommands) into .ref/osu, a folder git ignores, so that it can be
# built here or travel to the GPU machine with the work tree; none of its
# code is ever committed here.
#
# Usage: bash results/ref/stage-osu.sh GIT_DIR [REF]
#   GIT_DIR  a clone (bare or not) of a repository holding OSU 7.4's tree
#            with its generated configure (e.g. sherrywong1220/osu-micro-benchmarks-7.4)
#   REF      tag or commit to export (default: HEAD)
# The exported tree gets a file QBENCH_REF naming the commit.
set -euo pipefail
GIT_DIR=$1
REF=${2:-HEAD}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST="$ROOT/.ref/osu"

if ! git -C "$ROOT" check-ignore -q "$DEST"; then
    echo "stage-osu: $DEST is not ignored by git; refusing to put foreign code there" >&2
    exit 2
fi
commit=$(git --git-dir="$GIT_DIR" rev-parse --verify "$REF^{commit}")
rm -rf "$DEST"
mkdir -p "$DEST"
git --git-dir="$GIT_DIR" archive --format=tar "$commit" | tar -x -C "$DEST"
grep -q 'OMB_VERSION\|7\.4' "$DEST/configure" || { echo "stage-osu: $GIT_DIR at $REF holds no OSU 7.4 configure" >&2; exit 2; }
printf 'repository %s\nref %s\ncommit %s\n' "$GIT_DIR" "$REF" "$commit" > "$DEST/QBENCH_REF"
echo "OSU Micro-Benchmarks ($commit) exported to $DEST"
