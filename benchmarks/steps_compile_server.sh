# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_compile_server.sh): where the
# compile workers of the Liger and fla subsets come from and where anything waits with the
# compile server on (TUNEGATE_COMPILE_SERVER=1; both under `tunegate run` side by side for
# DIAG_LIMIT_S (55) s, every process's stacks taken DIAG_DELAY_S (35) s in: diag_stuck.sh, with a
# py-spy wheel from peer/diag/), then the library steps LIBRARY_STEPS picks (steps_libraries.sh),
# with the default.
step diag_libraries $(( ${DIAG_LIMIT_S:-55} + 20 )) env OUT="$WORK/results/diag" DELAY_S=${DIAG_DELAY_S:-35} LIMIT_S=${DIAG_LIMIT_S:-55} \
    PYSPY_WHEEL="$(ls peer/diag/*.whl 2>/dev/null | head -1)" TUNEGATE_COMPILE_SERVER=1 \
    bash benchmarks/diag_stuck.sh "OUT=$WORK/results/diag bash benchmarks/diag_libraries.sh"
for trace in "$WORK"/results/diag/trace-*.jsonl; do
    log "$(basename "$trace"): $(grep -c '"event": "tuner"' "$trace") tunings, $(grep -c '"role": "compile"' "$trace") compile workers started"
done
grep -hs -e '"compile server stuck"' -e 'ends its service' "$WORK"/results/diag/trace-*.jsonl | cut -c1-200 | sed 's/^/    /' >> "$LOG"
LIBRARY_STEPS=${LIBRARY_STEPS:-none}
source benchmarks/steps_libraries.sh
