# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_libraries.sh): the checks on
# code written by others. Needs peer/ (see peer_suite.sh) and WHEEL_DIRS=".whl peer/whl .helion_whl".
# LIBRARY_STEPS picks them, in this order (default: peer_liger helion):
# - force_fla: each config of the fla kernel the shipped policy excludes on a call, forced and
#   run through fla's own test FORCE_REPEAT times (is the exclusion right? issue 17);
# - helion: Helion's softmax and matmul autotuned through the adapter (issue 17), HELION_S s,
#   HELION_KERNELS (default "softmax matmul");
# - peer_liger, peer_fla: the library's cases (peer/ids_*.txt) stock, then twice through
#   `tunegate run -m pytest` (issues 15, 16); LIMITS_liger / LIMITS_fla: "stock first second" s;
#   RUNS_liger / RUNS_fla may add base1 (BASE_TREE's code, cold: see peer_suite.sh);
# - rule_review: what the shipped policy removes from the libraries' autotune lists (issue 17);
# - ab: cold tunings of each list of AB_LIST (default softmax_8192) in AB_ROUNDS turns (default
#   3) of stock and each of AB_TREES (default ".", e.g. ". ab/<sha>"), each run traced (issue
#   16), AB_S s a list; AB_ROUNDS_<list> / AB_S_<list> for one list; AB_NO_STOCK=1 leaves stock out.
FORCE_TESTS=${FORCE_TESTS:-"tests/ops/test_ttt.py::test_chunk[B1-T63-H1-D64-scale1-chunk_size16-torch.float16]"}
wanted() { [[ " ${LIBRARY_STEPS:-peer_liger helion} " == *" $1 "* ]]; }
wanted force_fla && step force_fla 90 bash -c "cd peer/fla && $PY ../../benchmarks/force_configs.py \
    --kernel chunk_bwd_kernel_dqke --repeat ${FORCE_REPEAT:-5} \
    --json $WORK/results/force_fla.json -- '$FORCE_TESTS'"
for list in ${AB_LIST:-softmax_8192}; do  # AB_ROUNDS_<list> / AB_S_<list> for one list
    rounds_var=AB_ROUNDS_$list s_var=AB_S_$list
    s=${!s_var:-${AB_S:-90}}
    wanted ab && step ab_$list $s "$PY" benchmarks/ab_tune.py --list "$list" \
        --rounds "${!rounds_var:-${AB_ROUNDS:-3}}" --trees ${AB_TREES:-.} --budget-s $(( s - 25 )) \
        $( [[ ${AB_NO_STOCK:-0} == 1 ]] && echo --no-stock ) \
        --json "$WORK/results/ab/$list.json" --trace "$WORK/results/ab/$list"
done
wanted helion && step helion ${HELION_S:-80} bash -c "$PY benchmarks/helion_gpu.py --effort quick \
    --generations 3 --kernels ${HELION_KERNELS:-softmax matmul} > $WORK/results/helion_h200.jsonl; echo exit=\$?; \
    cat $WORK/results/helion_h200.jsonl"
for lib in liger fla; do
    limits_var=LIMITS_$lib
    read -r s1 s2 s3 <<< "${!limits_var:-90 100 45}"
    runs_var=RUNS_$lib
    [[ " ${!runs_var:-${RUNS:-}} " == *" base1 "* ]] && s3=$(( s3 + s2 ))  # one more cold run
    wanted peer_$lib && step peer_$lib $(( s1 + s2 + s3 + 40 )) bash -c "cd peer && DIRS=$lib \
        IDS_GIVEN=1 LIMITS_$lib='$s1 $s2 $s3' OUT=$WORK/results/peer_$lib \
        bash ../benchmarks/peer_suite.sh && rm -f $WORK/results/peer_$lib/peer.tgz"
done
wanted rule_review && step rule_review 90 "$PY" benchmarks/rule_review.py \
    --json "$WORK/results/rule_review_h200.json"
true
