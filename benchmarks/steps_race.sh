# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_race.sh): triton#6691's race
# measured with plain Triton (back to back, then waiting for each launch) and through
# `tunegate policy verify` in a fresh process, to tell a race the GPU no longer shows from one
# the stress check misses; then the library steps (LIBRARY_STEPS, see steps_libraries.sh).
step race 60 "$PY" benchmarks/race_6691.py
step race_sync 60 "$PY" benchmarks/race_6691.py --sync
step verify_race 120 "$PY" -m tunegate policy verify dot-trans-with-sum-deep-pipeline \
    dot-trans-with-sum-two-stages --json
# shellcheck disable=SC1091  # beside this file
source benchmarks/steps_libraries.sh
