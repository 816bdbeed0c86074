# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_startup.sh): the library steps
# that LIBRARY_STEPS picks (see steps_libraries.sh; default none here), then what a tuning's
# first worker costs before it can time anything, part by part (benchmarks/startup_parts.py,
# STARTUP_REPEAT runs of each part, default 3).
LIBRARY_STEPS=${LIBRARY_STEPS:-none}
source benchmarks/steps_libraries.sh
step startup_parts 150 "$PY" benchmarks/startup_parts.py --repeat "${STARTUP_REPEAT:-3}" \
    --json "$WORK/startup_parts.json"
