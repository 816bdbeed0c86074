# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_compile_server.sh): where the
# compile workers of the Liger and fla subsets come from and where anything waits (both under
# `tunegate run` side by side, every process's stacks taken 35 s in: diag_stuck.sh, with a py-spy
# wheel from peer/diag/), then the library steps LIBRARY_STEPS picks (steps_libraries.sh),
# without the compile server (TUNEGATE_COMPILE_SERVER=0) where the first step found it stuck.
step diag_libraries 75 env OUT="$WORK/results/diag" DELAY_S=35 LIMIT_S=55 \
    PYSPY_WHEEL="$(ls peer/diag/*.whl 2>/dev/null | head -1)" \
    bash benchmarks/diag_stuck.sh "OUT=$WORK/results/diag bash benchmarks/diag_libraries.sh"
if grep -qs '"compile server stuck"' "$WORK"/results/diag/trace-*.jsonl; then
    export TUNEGATE_COMPILE_SERVER=0
    log "the compile server was stuck: the library steps run without it"
fi
grep -hs -c '"role": "compile"' "$WORK"/results/diag/trace-*.jsonl | sed 's/^/    compile workers started: /' >> "$LOG"
grep -hs '"compile server' "$WORK"/results/diag/trace-*.jsonl | cut -c1-200 | sed 's/^/    /' >> "$LOG"
LIBRARY_STEPS=${LIBRARY_STEPS:-none}
source benchmarks/steps_libraries.sh
