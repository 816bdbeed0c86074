"""Cold tunings of one list in turns: stock `triton.autotune` and tunegate from each source tree
named, so that a change is measured against the code before it in one run on one machine
(issue 16: these hosts drift by tens of percent between calls).

Each run is one of bench_gpu.py's phases (`stock`, or `tunegate` under `tunegate run`) in a
fresh process, with an empty Triton cache and store, from the tree named; each round runs every
variant once, so that drift touches them alike. Prints a table of medians; `--json` keeps
every run.

    python benchmarks/ab_tune.py --list softmax_8192 --rounds 5 --trees . ../old [--no-stock]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("startup_seconds", "compile_seconds", "timing_seconds", "check_seconds")


def run_once(phase: str, tree: Path, name: str, timeout: float, smoke: bool = False,
             trace: Path | None = None) -> dict[str, Any]:
    """One cold phase from `tree`: its record (wall_s, process_wall_s, the result's parts);
    `trace`: the file its processes write their timeline to (tunegate.autotune.trace)."""
    store = Path(tempfile.mkdtemp(prefix="ab-store-")) / "s.sqlite"
    env = {**os.environ, "TRITON_CACHE_DIR": tempfile.mkdtemp(prefix="ab-cache-"),
           "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    if trace is not None:
        env["TUNEGATE_TRACE"] = str(trace)
    runner = ["-m", "tunegate", "run"] if phase == "tunegate" else []
    command = [sys.executable, *runner, "-m", "benchmarks.bench_gpu", "--phase", phase,
               "--lists", name, "--shared", json.dumps({"store": str(store)})] + \
        (["--smoke"] if smoke else [])
    env["BENCH_SPAWNED_AT"] = repr(time.time())  # process time counts from here
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tree,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"failed": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"failed": f"exit {proc.returncode}", "stderr": proc.stderr[-2000:]}
    record = json.loads(proc.stdout.strip().splitlines()[-1])
    if "wall_s" not in record:
        return {"failed": str(record.get("skipped") or record)[:300]}
    out = {"wall_s": record["wall_s"], "process_wall_s": record["process_wall_s"],
           "child_wall_s": time.perf_counter() - start}
    result = record.get("result") or {}
    out.update({p: result[p] for p in PARTS if p in result})
    out["best"] = record.get("choice")
    return out


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if key in r]
    return statistics.median(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", required=True, help="a list of bench_gpu.py")
    parser.add_argument("--trees", nargs="+", type=Path, default=[ROOT],
                        help="source trees of tunegate to compare (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-stock", action="store_true", help="tunegate's trees only")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per run")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="no new round once this many seconds have passed")
    parser.add_argument("--smoke", action="store_true", help="toy sizes (a dry run)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--trace", type=Path, metavar="DIR",
                        help="a timeline of each tunegate run: DIR/trace-<tree>-<round>.jsonl")
    args = parser.parse_args()
    variants = ([] if args.no_stock else [("stock", ROOT)]) + \
        [("tunegate", t.resolve()) for t in args.trees]
    runs: dict[str, list[dict[str, Any]]] = {f"{p} {t}": [] for p, t in variants}
    start = time.monotonic()
    for r in range(args.rounds):
        if args.budget_s and r and time.monotonic() - start > args.budget_s:
            print(f"stopped after {r} rounds: the budget is spent", flush=True)
            break
        for phase, tree in variants:
            trace = None
            if args.trace and phase == "tunegate":
                args.trace.mkdir(parents=True, exist_ok=True)
                trace = args.trace / f"trace-{tree.name}-{r + 1}.jsonl"
            record = run_once(phase, tree, args.list, args.timeout, args.smoke, trace)
            runs[f"{phase} {tree}"].append(record)
            print(f"round {r + 1} {phase:<8} {tree}: "
                  + (record.get("failed") or f"{record['wall_s']:.2f} s "
                     f"(process {record['process_wall_s']:.2f} s)"), flush=True)
    stock = _median(runs.get(f"stock {ROOT}", []), "wall_s")
    print(f"\n| {args.list} | runs | tuning s (median) | process s | / stock | "
          + " | ".join(p.split("_")[0] for p in PARTS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(PARTS))
    for variant, done in runs.items():
        wall = _median(done, "wall_s")
        parts = [_median(done, p) for p in PARTS]
        ratio = f"{wall / stock:.2f}" if wall and stock else "-"
        cells = [wall, _median(done, "process_wall_s")]
        print(f"| {variant} | {sum('wall_s' in d for d in done)} | "
              + " | ".join("-" if v is None else f"{v:.2f}" for v in cells) + f" | {ratio} | "
              + " | ".join("-" if v is None else f"{v:.2f}" for v in parts) + " |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"list": args.list, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
