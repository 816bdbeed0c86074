#!/usr/bin/env bash
# The Liger and fla subsets of peer/ (see peer_suite.sh) side by side under `tunegate run`, each
# traced (TUNEGATE_TRACE) into $OUT, on a store and Triton caches of their own (a later cold run
# stays cold). Run from the repository root; diag_stuck.sh takes the stacks meanwhile.
OUT=${OUT:-/tmp/diag-out}; mkdir -p "$OUT"
for lib in liger fla; do
    (cd peer/$lib && TRITON_CACHE_DIR=/tmp/triton-cache-diag-$lib TUNEGATE_STORE=/tmp/diag-store.sqlite \
        TUNEGATE_TRACE="$OUT/trace-$lib.jsonl" python3 -m tunegate run -m pytest $(cat ../ids_$lib.txt) \
        -q -p no:cacheprovider -W ignore -o log_cli=true --log-cli-level=DEBUG > "$OUT/$lib.log" 2>&1) &
done
wait
