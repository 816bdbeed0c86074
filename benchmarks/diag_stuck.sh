#!/usr/bin/env bash
# Where a run is stuck: start COMMAND in the background, and after DELAY_S seconds record the
# process tree, every Python process's stacks (py-spy, from a wheel in PYSPY_WHEEL) and the
# compile server's log; stop the command at LIMIT_S. For a GPU call, e.g.
#   OUT=$OUT DELAY_S=40 LIMIT_S=70 bash benchmarks/diag_stuck.sh "cd peer/liger && python3 -m tunegate run -m pytest ..."
# Output under $OUT: ps.txt, stacks.txt, compile-server-*.log, command.log. Processes of
# `tunegate run` still there at the end are killed.
set -u
OUT=${OUT:-/tmp/diag-out}; mkdir -p "$OUT"
DELAY_S=${DELAY_S:-40}; LIMIT_S=${LIMIT_S:-70}
if [[ -n ${PYSPY_WHEEL:-} ]]; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/pyspy "$PYSPY_WHEEL"
fi
SPY=$(ls /tmp/pyspy/bin/py-spy 2>/dev/null || command -v py-spy)
timeout -s INT -k 10 "$LIMIT_S" bash -c "$1" > "$OUT/command.log" 2>&1 &
RUN=$!
sleep "$DELAY_S"
ps -eo pid,ppid,stat,etimes,wchan:24,args --forest | cut -c1-220 > "$OUT/ps.txt"
for pid in $(pgrep "^python"); do
    echo "=== $pid $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-160)"
    echo "wchan $(cat /proc/$pid/wchan 2>/dev/null)"
    [[ -n $SPY ]] && timeout 20 "$SPY" dump --pid "$pid" 2>&1 | head -120
done > "$OUT/stacks.txt" 2>&1
for f in /tmp/tunegate-compile-server-*.log; do
    [[ -f $f ]] && cp "$f" "$OUT/compile-server-$(basename "$f")"
done
wait "$RUN"
echo "command exit $?" >> "$OUT/command.log"
pkill -9 -f "tunegate run" 2> /dev/null  # workers left behind must not share the GPU with what follows
sleep 1
