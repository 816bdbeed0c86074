# Steps for benchmarks/gpu_session.sh (EXTRA_STEPS=benchmarks/steps_libraries.sh): the checks on
# code written by others. Needs peer/ (see peer_suite.sh) and WHEEL_DIRS=".whl peer/whl .helion_whl".
# LIBRARY_STEPS picks them (default: all three):
# - force_fla: each config of the fla kernel the shipped policy excludes on a call, forced and
#   run through fla's own test FORCE_REPEAT times (is the exclusion right? issue 17);
# - peer_liger: Liger-Kernel's cases stock, then twice through `tunegate run -m pytest` (issue 15);
# - helion: Helion's softmax and matmul autotuned through the adapter (issue 17).
FORCE_TESTS=${FORCE_TESTS:-"tests/ops/test_ttt.py::test_chunk[B1-T63-H1-D64-scale1-chunk_size16-torch.float16]"}
wanted() { [[ " ${LIBRARY_STEPS:-force_fla peer_liger helion} " == *" $1 "* ]]; }
wanted force_fla && step force_fla 90 bash -c "cd peer/fla && $PY ../../benchmarks/force_configs.py \
    --kernel chunk_bwd_kernel_dqke --repeat ${FORCE_REPEAT:-5} \
    --json $WORK/results/force_fla.json -- '$FORCE_TESTS'"
wanted peer_liger && step peer_liger 170 bash -c "cd peer && DIRS=liger IDS_GIVEN=1 \
    LIMITS_liger='55 65 30' OUT=$WORK/results/peer bash ../benchmarks/peer_suite.sh \
    && rm -f $WORK/results/peer/peer.tgz"
wanted helion && step helion 80 bash -c "$PY benchmarks/helion_gpu.py --effort quick \
    --generations 3 > $WORK/results/helion_h200.jsonl; echo exit=\$?; \
    cat $WORK/results/helion_h200.jsonl"
true
