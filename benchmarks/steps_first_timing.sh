# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_first_timing.sh): where a
# cold tuning's first timing goes (benchmarks/first_timing_probe.py), then one traced cold
# tuning of softmax_8192 whose trace splits each timing into its first launch and benchmark.
step first_timing 60 "$PY" benchmarks/first_timing_probe.py
step ab_softmax_8192 45 "$PY" benchmarks/ab_tune.py --list softmax_8192 --rounds 1 --trees . \
    --no-stock --budget-s 30 --json "$WORK/results/ab/softmax_8192.json" --trace "$WORK/results/ab/softmax_8192"
# LIBRARY_STEPS (see steps_libraries.sh) may add the library steps after these (default none).
LIBRARY_STEPS=${LIBRARY_STEPS:-none}
source benchmarks/steps_libraries.sh
