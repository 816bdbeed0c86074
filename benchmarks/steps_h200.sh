# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_h200.sh): the issue checks
# that need the H200 besides the GPU tests. Each writes its results under $WORK/results.
step verify 240 bash -c "$PY -m tunegate policy verify; echo exit=\$?; \
    $PY -m tunegate policy verify --json > $WORK/results/verify_h200.json; echo json-exit=\$?"
step rule_review 150 "$PY" benchmarks/rule_review.py --json "$WORK/results/rule_review_h200.json"
step run_report 90 "$PY" -m tunegate run tests/kernels/run_add.py --cuda
step helion_bench 200 bash -c "$PY benchmarks/helion_gpu.py --effort quick \
    > $WORK/results/helion_h200.json"
