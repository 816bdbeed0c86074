#!/usr/bin/env bash
# One whole GPU session in one command: install, GPU tests, benchmarks, report, one tarball.
#
#   BENCH_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/gpu_session.sh
#
# Every step runs under `timeout` and the session goes on after a failing step; everything is
# logged. All output ends up in $OUT/results.tgz (OUT defaults to ./session-out). Settings:
#   SESSION_BUDGET_S   seconds the whole session may take (default 560: under a 600 s limit)
#   TESTS_TIMEOUT_S    seconds for the GPU tests (default 150; 0 skips them)
#   GPU_TESTS          test files to run with -m gpu (default: tests/test_gpu.py and the
#                      precompile test)
#   BENCH_LISTS        lists to benchmark, in order (default: the two anchors, then the five
#                      kernels); see `python3 benchmarks/bench_gpu.py --help`
#   BENCH_PHASE_TIMEOUT_S  seconds per phase of one list (default 240)
#   BENCH_FIRST=1      run the benchmarks before the extra steps; BENCH_LIMIT_S caps them
#   BENCH_SMOKE=1      toy sizes and two configs per list (a dry run of the session)
#   BENCH_PROFILE=1    add the profile phase (each list tuned in-process under cProfile)
#   BENCH_COMMIT       the commit to record (the device copy has no .git)
#   PYTHON             the interpreter (default python3)
#   WHEEL_DIRS         folders of wheels installed into /tmp/site (default .whl)
#   EXTRA_STEPS        a bash file of `step NAME SECONDS COMMAND...` lines, run after the tests
#                      (results go under $WORK/results), e.g. benchmarks/steps_h200.sh
set -u

START=$(date +%s)
OUT=${OUT:-$PWD/session-out}
WORK=$(mktemp -d /tmp/gpu-session.XXXXXX)
LOG=$WORK/session.log
PY=${PYTHON:-python3}
SESSION_BUDGET_S=${SESSION_BUDGET_S:-560}
TESTS_TIMEOUT_S=${TESTS_TIMEOUT_S:-150}
GPU_TESTS=${GPU_TESTS:-tests/test_gpu.py tests/autotune/test_autotune_precompile.py tests/autotune/test_speed_staged.py}
BENCH_LISTS=${BENCH_LISTS:-softmax_8192 matmul_4096 store_load softmax layernorm matmul splitk}
BENCH_PHASE_TIMEOUT_S=${BENCH_PHASE_TIMEOUT_S:-240}
TAR_RESERVE_S=15  # kept back for the report and the tarball
mkdir -p "$OUT" "$WORK/results"

log() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }
left() { echo $(( SESSION_BUDGET_S - ($(date +%s) - START) - TAR_RESERVE_S )); }

# step NAME SECONDS COMMAND...: run with a time limit, output to $WORK/NAME.log, never abort.
step() {
    local name=$1 limit=$2; shift 2
    if (( limit > $(left) )); then limit=$(left); fi
    if (( limit < 5 )); then log "$name: skipped, the session budget is spent"; return 0; fi
    log "$name: start (limit ${limit}s): $*"
    local t0=$(date +%s)
    setsid timeout -k 5 "$limit" "$@" > "$WORK/$name.log" 2>&1 &  # a session of its own
    local pid=$!
    wait "$pid"
    local rc=$?
    log "$name: exit $rc after $(( $(date +%s) - t0 ))s$( ((rc == 124)) && echo ' (timed out)')"
    tail -n 25 "$WORK/$name.log" | sed "s/^/    $name| /" >> "$LOG"
    # What the step left running (a timed-out test run's workers) would slow the next step's
    # measurements: named in the log, then killed.
    local left
    left=$(ps -o pid=,etimes=,pcpu=,args= -s "$pid" 2>/dev/null | cut -c1-150)
    if [[ -n $left ]]; then
        log "$name: killing what it left running:"
        echo "$left" | sed "s/^/    $name left| /" >> "$LOG"
        # shellcheck disable=SC2046  # one pid a word
        kill -KILL $(echo "$left" | awk '{print $1}') 2>/dev/null
    fi
    return 0
}

log "session in $PWD, output $OUT/results.tgz, budget ${SESSION_BUDGET_S}s"

WHEELS=()
for dir in ${WHEEL_DIRS:-.whl}; do WHEELS+=("$dir"/*.whl); done
if compgen -G ".whl/*.whl" > /dev/null; then
    step install 120 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/site "${WHEELS[@]}"
    export PYTHONPATH=/tmp/site:$PWD
else
    log "install: no .whl/ here, using the installed packages"
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi

step environment 60 bash -c "nvidia-smi; nproc; free -g; $PY -c 'import sys, torch, triton, \
pydantic; print(sys.version); print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \
torch.cuda.device_count(), \"GPUs\"); print(\"triton\", triton.__version__); print(\"pydantic\", \
pydantic.VERSION)'"

if (( TESTS_TIMEOUT_S > 0 )); then
    # shellcheck disable=SC2086  # GPU_TESTS is a list of paths
    step gpu_tests "$TESTS_TIMEOUT_S" "$PY" -m pytest -m gpu -v -p no:cacheprovider $GPU_TESTS
fi

bench() {
    local limit=$(left)
    if [[ -n ${BENCH_LIMIT_S:-} ]] && (( BENCH_LIMIT_S < limit )); then limit=$BENCH_LIMIT_S; fi
    local flags=()
    [[ ${BENCH_SMOKE:-0} == 1 ]] && flags=(--smoke)
    [[ ${BENCH_PROFILE:-0} == 1 ]] && flags+=(--profile)
    # shellcheck disable=SC2086  # BENCH_LISTS is a list of names
    step bench "$limit" "$PY" benchmarks/bench_gpu.py --out "$WORK/results" \
        --budget-s $(( limit - 10 )) --timeout "$BENCH_PHASE_TIMEOUT_S" --lists $BENCH_LISTS \
        "${flags[@]}"
}

# BENCH_FIRST=1: the benchmarks before the extra steps (BENCH_LIMIT_S caps them); BENCH_LISTS=none
# skips them.
[[ ${BENCH_FIRST:-0} == 1 && $BENCH_LISTS != none ]] && bench

if [[ -n ${EXTRA_STEPS:-} ]]; then
    # shellcheck disable=SC1090  # a file of step lines, named by the caller
    source "$EXTRA_STEPS"
fi

[[ ${BENCH_FIRST:-0} != 1 && $BENCH_LISTS != none ]] && bench

TAR_RESERVE_S=0
if compgen -G "$WORK/results/*.json" > /dev/null; then
    step report 20 bash -c "$PY benchmarks/report.py $WORK/results/*.json > $WORK/results/RESULTS_tables.md"
else
    log "report: no benchmark results to report"
fi

log "session done; packing $OUT/results.tgz"
tar czf "$OUT/results.tgz" -C "$WORK" . && log "packed $(du -h "$OUT/results.tgz" | cut -f1)"
cp "$LOG" "$OUT/session.log"
