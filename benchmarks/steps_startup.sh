# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_startup.sh): what a tuning's
# first worker costs before it can time anything, part by part (benchmarks/startup_parts.py).
step startup_parts 150 "$PY" benchmarks/startup_parts.py --repeat 3 --json "$WORK/startup_parts.json"
