# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_h200.sh): the issue checks
# that need the H200 besides the GPU tests. Each writes its results under $WORK/results.
step verify 180 bash -c "$PY -m tunegate policy verify --json > $WORK/results/verify_h200.json; \
    echo exit=\$?; $PY -c 'import json, sys; d = json.load(open(sys.argv[1])); \
[print(c[\"rule\"], c[\"state\"], c.get(\"why\", \"\")[:150]) for c in d[\"checks\"]]' \
    $WORK/results/verify_h200.json"
step rule_review 90 "$PY" benchmarks/rule_review.py --json "$WORK/results/rule_review_h200.json"
step run_report 40 "$PY" -m tunegate run tests/kernels/run_add.py --cuda
