# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_costs.sh): what each part of
# the checks costs (benchmarks/check_costs.py, on the anchor lists, with a reference and as
# `tunegate run` checks a call), then the library steps that
# LIBRARY_STEPS picks (see steps_libraries.sh; default none here).
step check_costs 90 "$PY" benchmarks/check_costs.py --json "$WORK/check_costs.json"
step check_costs_dropin 100 "$PY" benchmarks/check_costs.py --dropin --json "$WORK/check_costs_dropin.json"
LIBRARY_STEPS=${LIBRARY_STEPS:-none}
source benchmarks/steps_libraries.sh
