#!/usr/bin/env bash
# Build the smoothed-SSVM paper's reference code (casimir, github.com/krishnap25/casimir,
# commit a8cb8dd) beside skstruct, for the side-by-side of bench_casimir_reference.py.
#
#   bash benchmarks/reference_casimir/setup_casimir.sh
#
# Makes $PEERS_CACHE/casimir (PEERS_CACHE defaults to ~/.cache/skstruct-peers): the
# source patched with casimir.patch and its two Cython modules built in place, and a venv
# casimir-venv with numpy, scipy, scikit-learn, Cython and this checkout of skstruct
# (editable), so that both run in one process. The source comes from CASIMIR_SRC (a git
# repository or a directory holding the casimir/ package) or, without it, from a clone of
# the public repository. The patch: np.int and np.object (removed from NumPy 1.24) become
# np.int64 and object, and the buffer type np.int_t (gone from NumPy 2's Cython
# declarations) np.int64_t; setup.py uses setuptools and cythonize (distutils is gone
# from Python 3.12); viterbi.pyx gains viterbi_decode_tables and
# viterbi_decode_top_k_tables, its two dynamic programs (tie-breaking included) with the
# part scores read from tables (unary, transition, start, end) instead of computed from
# the NER features, so that the reference's optimizers run on the features skstruct uses
# (reference_casimir/exported_ifo.py). Idempotent; delete $PEERS_CACHE/casimir to start over.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${PEERS_CACHE:-$HOME/.cache/skstruct-peers}/casimir"
COMMIT=a8cb8dd
PYTHON="${PYTHON:-python3}"
log() { echo "[setup_casimir] $*"; }
mkdir -p "$CACHE"

if [ ! -d "$CACHE/src/casimir" ]; then
  rm -rf "$CACHE/src" && mkdir -p "$CACHE/src"
  if [ -n "${CASIMIR_SRC:-}" ] && git -C "$CASIMIR_SRC" rev-parse --git-dir >/dev/null 2>&1; then
    log "source: $CASIMIR_SRC at $COMMIT"
    git -C "$CASIMIR_SRC" archive "$COMMIT" casimir | tar -x -C "$CACHE/src"
  elif [ -n "${CASIMIR_SRC:-}" ]; then
    log "source: directory $CASIMIR_SRC"
    cp -r "$CASIMIR_SRC/casimir" "$CACHE/src/"
  else
    log "source: cloning github.com/krishnap25/casimir"
    git clone -q https://github.com/krishnap25/casimir "$CACHE/clone"
    git -C "$CACHE/clone" archive "$COMMIT" casimir | tar -x -C "$CACHE/src"
  fi
  (cd "$CACHE/src" && patch -s -p1 < "$HERE/casimir.patch")
fi

if [ ! -x "$CACHE/venv/bin/python" ]; then
  log "creating venv $CACHE/venv"
  "$PYTHON" -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install -q --disable-pip-version-check setuptools Cython numpy scipy scikit-learn
  "$CACHE/venv/bin/pip" install -q --disable-pip-version-check -e "$ROOT"
fi

NER="$CACHE/src/casimir/data/named_entity_recognition"
if ! ls "$NER"/viterbi*.so >/dev/null 2>&1; then
  log "building the Cython modules"
  (cd "$NER" && "$CACHE/venv/bin/python" setup.py -q build_ext --inplace)
fi
"$CACHE/venv/bin/python" -c "import sys; sys.path.insert(0, '$CACHE/src'); \
from casimir.data.named_entity_recognition import viterbi; \
assert hasattr(viterbi, 'viterbi_decode_top_k_tables'); print('[setup_casimir] ok:', '$CACHE')"
