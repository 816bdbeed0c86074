"""Where a traced program's tunings spent their time, from its TUNEGATE_TRACE file (issue 16).

For each trace file: when the program started and ended (seconds from the first event), each
tuning (its kernel and seconds) with the compile workers started during it and its first
timing request (which makes the kernel's launcher), the spare run worker's CUDA context and
Triton driver steps, and how long closing the kept workers took. What the issue's traces were
read for by hand: a first tuning waiting for its compile workers, compile workers piling up,
a C helper built on the critical path.

    python benchmarks/trace_summary.py TRACE.jsonl [...] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tunegate.autotune.trace import read  # noqa: E402 - the repository's own, from a checkout


def summary(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The parts of one trace (events in time order), in seconds from its first event."""
    if not events:
        return {"events": 0}
    t0 = events[0]["t"]
    tunings: list[dict[str, Any]] = []
    out: dict[str, Any] = {"events": len(events), "tunings": tunings, "compile_workers": 0}
    for e in events:
        at, name = round(e["t"] - t0, 3), e["event"]
        if name == "tuner":
            tunings.append({"task": e.get("task"), "at": at, "compile_workers_started": 0})
        elif name == "run" and tunings:
            tunings[-1]["seconds"] = e.get("seconds")
        elif name == "worker start" and e.get("role") == "compile":
            out["compile_workers"] += 1
            if tunings and "seconds" not in tunings[-1]:
                tunings[-1]["compile_workers_started"] += 1
        elif name == "Time" and tunings and "first_time_s" not in tunings[-1]:
            tunings[-1]["first_time_s"] = e.get("seconds")
        elif name in ("cuda context", "triton driver") and name not in out:
            out[name] = e.get("seconds")
        elif name in ("program", "program ended"):
            out[name.replace(" ", "_") + "_at"] = at
        elif name == "close idle workers":
            out["close_idle_workers_s"] = e.get("seconds")
    out["tuning_s"] = round(sum(t.get("seconds") or 0 for t in tunings), 3)
    return out


def _render(path: str, s: dict[str, Any]) -> str:
    lines = [f"{path}: {s['events']} events"]
    if not s["events"]:
        return lines[0]
    parts = [f"{k} {s[k]}" for k in ("program_at", "program_ended_at", "cuda context",
                                      "triton driver", "close_idle_workers_s") if k in s]
    lines.append("  " + ", ".join(parts))
    lines.append(f"  {len(s['tunings'])} tunings, {s['tuning_s']} s; "
                 f"{s['compile_workers']} compile workers started")
    for t in s["tunings"]:
        first = t.get("first_time_s")
        lines.append(f"  {t['at']:8.2f}  {t.get('seconds') or 0:6.2f} s  {t['task']}"
                     f"  (+{t['compile_workers_started']} compile workers"
                     + (f", first timing {first:.3f} s" if first is not None else "") + ")")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--json", action="store_true", help="one JSON object per file")
    args = parser.parse_args(argv)
    for path in args.traces:
        s = summary(read(path))
        print(json.dumps({"trace": path, **s}) if args.json else _render(path, s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
