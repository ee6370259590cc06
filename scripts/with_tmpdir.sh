#!/usr/bin/env bash
# Runs a command with TMPDIR set to a folder of its own, removed when the
# command ends, however it ends (a test killed by a signal skips its own
# atexit clean-up; Ctrl-C or SIGTERM of the run still gets here).
#   scripts/with_tmpdir.sh CMD [ARGS...]
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/drape-run-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
TMPDIR=$dir "$@"
