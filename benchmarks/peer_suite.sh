#!/usr/bin/env bash
# fla + Liger-Kernel op tests, stock vs `tunegate run -m pytest` (twice: cold, then reusing the
# store), on a GPU machine. Run from a folder `peer/` (ignored by git) that holds:
#   fla/tests/...        test files of flash-linear-attention (its repository, not copied here)
#   liger/test/...       test files of Liger-Kernel, with test/utils.py and test/conftest.py
#   fla/pytest.ini, liger/pytest.ini   containing "[pytest]" (each its own rootdir)
#   whl/                 fla-core and liger-kernel wheels; ../.whl/ holds pydantic and its needs
# PER_FILE cases of each test file run (default 2; PER_FILE_fla / PER_FILE_liger for one); DIRS picks the libraries (default "fla liger");
# LIMITS gives each run's time limit in seconds as "stock first second" (default "200 300 150");
# LIMITS_fla / LIMITS_liger override it for one library.
# RUNS picks the runs (default "stock tunegate1 tunegate2"; RUNS_fla / RUNS_liger for one);
# collect is stock pytest's start-up and collection alone (no test runs): the floor under any run
# of the suite, a second run that tunes nothing included (run it after stock: warm file cache); base1
# is a cold `tunegate run` of the tunegate tree in BASE_TREE (a folder holding an earlier commit's
# `tunegate/`, e.g. from `git archive`), with a store of its own: a change against the code before
# it, in one call (these hosts drift between calls); nowarm2 is a second run with TUNEGATE_WARM=0
# (no worker server, no spare workers, no mirrored imports: what warming up costs a run that
# tunes nothing); warm2 is a second run with TUNEGATE_WARM=1 (warmed up although its last run's
# bests are all stored: what `run_memory`'s deferral saves); imports and imports2 are stock's collection and a second `tunegate run`'s, each with
# PYTHONPROFILEIMPORTTIME=1 and -s (python's per-module import times in the log, which pytest's
# capture would swallow: where a second run's start-up goes); with IDS_GIVEN=1 the case lists
# ids_fla.txt / ids_liger.txt already in peer/ are used as they are (no collection).
# Each run starts on an empty Triton cache of its own (cold, as a first run is), except the second
# tunegate run, which finds the first one's (as a second run of a suite does). A run over its
# limit gets SIGINT first, so `tunegate run` still prints its table of the tunings done. The
# tunegate runs record a trace of every process (trace-RUN-DIR.jsonl: tunegate.autotune.trace).
# Results in $OUT/peer.tgz.
set -u
OUT=${OUT:-/tmp/peer-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ../.whl/*.whl whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$(cd .. && pwd) PYTHONUNBUFFERED=1 TUNEGATE_STORE=/tmp/peer-store.sqlite
PER_FILE=${PER_FILE:-2}
DIRS=${DIRS:-fla liger}
: > ids.txt
for d in $DIRS; do
  [[ ${IDS_GIVEN:-0} == 1 && -s ids_$d.txt ]] && continue
  (cd $d && timeout 60 python3 -m pytest --co -q -p no:cacheprovider $(ls tests/*/test_*.py tests/*/*/test_*.py test/transformers/test_*.py 2>/dev/null) 2>&1 | grep '::' > ../ids_$d.all)
  # the first PER_FILE cases of each file
  per_var=PER_FILE_$d
  awk -F'::' -v n=${!per_var:-$PER_FILE} '{c[$1]++} c[$1]<=n' ids_$d.all > ids_$d.txt
  wc -l ids_$d.all ids_$d.txt
done
run() { # name dir timeout cache command...
  local name=$1 dir=$2 limit=$3 cache=$4; shift 4
  local t0=$(date +%s.%N)
  (cd $dir && TRITON_CACHE_DIR=/tmp/triton-cache-$cache-$dir timeout -s INT -k 20 $limit "$@" $(cat ../ids_$dir.txt) -q -p no:cacheprovider -W ignore --durations=0 > "$OUT/$name-$dir.log" 2>&1); local rc=$?
  echo "$name $dir rc=$rc seconds=$(python3 -c "print(round($(date +%s.%N)-$t0,1))") started=$t0 $(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)|collected in' "$OUT/$name-$dir.log" | tail -1)" | tee -a "$OUT/summary.txt"
}
for d in $DIRS; do
  limits_var=LIMITS_$d
  read -r STOCK_S FIRST_S SECOND_S <<< "${!limits_var:-${LIMITS:-200 300 150}}"
  runs_var=RUNS_$d
  for r in ${!runs_var:-${RUNS:-stock tunegate1 tunegate2}}; do
    case $r in
      stock) run stock $d $STOCK_S stock python3 -m pytest ;;
      collect) run collect $d $STOCK_S stock python3 -m pytest --collect-only ;;
      tunegate1) run tunegate1 $d $FIRST_S tunegate env TUNEGATE_TRACE="$OUT/trace-tunegate1-$d.jsonl" python3 -m tunegate run -m pytest -o log_cli=true --log-cli-level=DEBUG ;;
      base1) run base1 $d $FIRST_S base env PYTHONPATH=/tmp/site:$(cd "$BASE_TREE" && pwd) \
          TUNEGATE_STORE=/tmp/peer-store-base.sqlite TUNEGATE_TRACE="$OUT/trace-base1-$d.jsonl" \
          python3 -m tunegate run -m pytest -o log_cli=true --log-cli-level=DEBUG ;;
      tunegate2) run tunegate2 $d $SECOND_S tunegate env TUNEGATE_TRACE="$OUT/trace-tunegate2-$d.jsonl" python3 -m tunegate run -m pytest -o log_cli=true --log-cli-level=DEBUG ;;
      imports) run imports $d $STOCK_S stock env PYTHONPROFILEIMPORTTIME=1 python3 -m pytest --collect-only -s ;;
      imports2) run imports2 $d $SECOND_S tunegate env PYTHONPROFILEIMPORTTIME=1 TUNEGATE_TRACE="$OUT/trace-imports2-$d.jsonl" python3 -m tunegate run -m pytest --collect-only -s ;;
      warm2) run warm2 $d $SECOND_S tunegate env TUNEGATE_WARM=1 TUNEGATE_TRACE="$OUT/trace-warm2-$d.jsonl" python3 -m tunegate run -m pytest -o log_cli=true --log-cli-level=DEBUG ;;
      nowarm2) run nowarm2 $d $SECOND_S tunegate env TUNEGATE_WARM=0 TUNEGATE_TRACE="$OUT/trace-nowarm2-$d.jsonl" python3 -m tunegate run -m pytest -o log_cli=true --log-cli-level=DEBUG ;;
    esac
  done
done
grep -h -i "rejected config\|dropped config\|tunegate:" "$OUT"/tunegate1-*.log | sort | uniq -c | sort -rn | head -40 > "$OUT/tunegate_lines.txt"
grep "s: startup [0-9]" "$OUT"/tunegate1-*.log "$OUT"/base1-*.log > "$OUT/tuning_phases.txt" 2>/dev/null  # where each took its time
for f in "$OUT"/tunegate*-*.log; do  # the table `tunegate run` ends with: one row per tuning
  echo "== $(basename "$f")"; sed -n '/^tunegate: [0-9]* tuning/,$p' "$f"
done > "$OUT/tunings.txt"
cp ids_*.txt "$OUT/" ; cd "$OUT" && tar czf peer.tgz *.log *.txt $(ls *.jsonl 2>/dev/null)
