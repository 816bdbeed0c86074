"""Turn bench_gpu.py's JSON files into the tables of benchmarks/RESULTS.md.

    python benchmarks/report.py benchmarks/results/*.json > tables.md

Reads whatever fields a run recorded: a failed or skipped phase shows as such, and every
`*_seconds` field of tunegate's result becomes a column of the time breakdown.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# The goals of issue 10, for the two anchor lists.
GOALS = {"ratio": 0.33, "chosen_best": 1.02, "check_share": 0.05, "warm_overhead_s": 0.1}
ANCHORS = ("softmax_8192", "matmul_4096")


def _key(config: dict | None) -> str:
    return json.dumps(config, sort_keys=True)


def _fmt(x: float | None, spec: str, suffix: str = "") -> str:
    return "—" if x is None else format(x, spec) + suffix


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _phase_note(data: dict) -> str | None:
    """Why a phase has no numbers ('skipped: …' or 'failed: …'), or None when it ran."""
    if "skipped" in data:
        return f"skipped: {data['skipped']}"
    if "failed" in data:
        return f"failed: {data['failed']}" + (f"\n\n```\n{data['stderr'][-1500:]}\n```"
                                              if data.get("stderr") else "")
    return None


def summarize(record: dict) -> dict:
    """The numbers of one list: best correct time, each tuner's choice and cost, overheads."""
    truth = record.get("truth", {})
    rows = truth.get("rows", [])
    times = {_key(r["config"]): r for r in rows}
    correct = [r for r in rows if r.get("correct") and r.get("ms") is not None]
    best = min(correct, key=lambda r: r["ms"]) if correct else None
    out: dict[str, Any] = {
        "list": record.get("list", record.get("kernel")), "candidates": record["candidates"],
        "wrong": sum(1 for r in rows if not r.get("correct")) if rows else None,
        "best_ms": best["ms"] if best else None, "truth_note": _phase_note(truth)}
    side = record.get("verdict", {}).get("ms", {})  # the verdict phase: one process, in turns
    side = {_key(json.loads(k)): v for k, v in side.items()}
    for tuner in ("stock", "tunegate"):
        data = record.get(tuner, {})
        row = times.get(_key(data.get("choice"))) if data.get("choice") else None
        fastest = min((v for k, v in side.items() if times.get(k, {}).get("correct")),
                      default=None)
        out[tuner] = {"wall": data.get("wall_s"), "process": data.get("process_wall_s"),
                      "chosen_best": _div(row["ms"], best["ms"]) if row and best else None,
                      "side_by_side": _div(side.get(_key(data.get("choice"))), fastest)
                      if data.get("choice") else None,
                      "right": data["correct"] if "correct" in data
                      else (row.get("correct") if row else None),
                      "note": _phase_note(data)}
    result = record.get("tunegate", {}).get("result", {})
    out["check_share"] = _div(result.get("check_seconds"), result.get("wall_seconds"))
    out["result"] = result
    out["excluded"] = {k: v for k, v in result.get("removals", {}).items() if v}
    out["rejected"] = result.get("statuses", {}).get("wrong")
    warm, plain = record.get("warm", {}), record.get("plain", {})
    if "tune_s" in warm and "first_launch_s" in plain:
        out["warm_overhead_s"] = warm["tune_s"] + warm["first_launch_s"] - plain["first_launch_s"]
    else:
        out["warm_overhead_s"] = None
    out["warm"] = {"tune_s": warm.get("tune_s"), "launch_s": warm.get("first_launch_s"),
                   "plain_launch_s": plain.get("first_launch_s"), "reused": warm.get("reused"),
                   "note": _phase_note(warm) or _phase_note(plain)}
    if "copy_gbps" in truth and best:
        out["gbps"] = truth["kernel_bytes"] / best["ms"] / 1e6
        out["copy_gbps"] = truth["copy_gbps"]
    return out


def _verdict(t: dict) -> str:
    if t["note"]:
        return t["note"].split(":")[0]
    if t["chosen_best"] is None and t["right"] is None:
        return "—"
    side = f" ({_fmt(t['side_by_side'], '.3f')} side by side)" if t["side_by_side"] else ""
    return f"{_fmt(t['chosen_best'], '.3f')}{side}, " + ("right" if t["right"] else "**WRONG**")


def _wall(t: dict) -> str:
    if t["note"]:
        return t["note"].split(":")[0]
    return f"{_fmt(t['wall'], '.1f')} s ({_fmt(t['process'], '.1f')} s)"


def main_table(summaries: list[dict]) -> str:
    lines = ["| list | candidates (wrong) | best correct ms | stock tuning (process) | "
             "tunegate tuning (process) | tunegate / stock | stock: chosen/best | "
             "tunegate: chosen/best | check share | warm-start overhead | excluded by policy | "
             "rejected by check |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        st, tg = s["stock"], s["tunegate"]
        ratio = None if st["note"] or tg["note"] else _div(tg["wall"], st["wall"])
        excluded = ", ".join(f"{k}: {v}" for k, v in s["excluded"].items()) or "0"
        share = None if s["check_share"] is None else 100 * s["check_share"]
        lines.append(
            f"| {s['list']} | {s['candidates']} ({_fmt(s['wrong'], 'd')}) | "
            f"{_fmt(s['best_ms'], '.4f')} | {_wall(st)} | {_wall(tg)} | {_fmt(ratio, '.2f')} | "
            f"{_verdict(st)} | {_verdict(tg)} | {_fmt(share, '.1f', '%')} | "
            f"{_fmt(s['warm_overhead_s'], '.3f', ' s')} | {excluded} | "
            f"{_fmt(s['rejected'], 'd')} |")
    return "\n".join(lines)


def _seconds_fields(result: dict) -> dict[str, float]:
    """Every numeric `*_seconds` field of a TuneResult, nested dicts of seconds flattened."""
    found: dict[str, float] = {}
    for name, value in result.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and name.endswith("seconds") and name != "wall_seconds":
            found[name.removesuffix("_seconds")] = float(value)
        elif isinstance(value, dict) and ("second" in name or name in ("stages", "breakdown")):
            for k, v in value.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    found[f"{name}.{k}"] = float(v)
    return found


def breakdown_table(summaries: list[dict]) -> str:
    """Where tunegate's time goes: start-up before tuning, and each part its result reports."""
    columns = sorted({k for s in summaries for k in _seconds_fields(s["result"])})
    lines = ["| list | process | start-up (process − tuning) | tuning | "
             + " | ".join(columns) + " | warm: tune + first launch / plain first launch |",
             "|---|---|---|---|" + "---|" * len(columns) + "---|"]
    for s in summaries:
        tg, fields, w = s["tunegate"], _seconds_fields(s["result"]), s["warm"]
        start_up = None if tg["process"] is None or tg["wall"] is None \
            else tg["process"] - tg["wall"]
        cells = [f"{_fmt(fields.get(c), '.2f')} s"
                 + (f" ({100 * fields[c] / tg['wall']:.0f}%)" if c in fields and tg["wall"]
                    else "") for c in columns]
        warm = "—" if w["note"] else (f"{_fmt(w['tune_s'], '.3f')} + {_fmt(w['launch_s'], '.3f')}"
                                      f" / {_fmt(w['plain_launch_s'], '.3f')} s"
                                      + ("" if w["reused"] else " (not reused)"))
        lines.append(f"| {s['list']} | {_fmt(tg['process'], '.1f', ' s')} | "
                     f"{_fmt(start_up, '.1f', ' s')} | {_fmt(tg['wall'], '.1f', ' s')} | "
                     + " | ".join(cells) + f" | {warm} |")
    return "\n".join(lines)


def goals(summaries: list[dict]) -> str:
    """Issue 10's goals on the anchor lists: met, or missed by how much."""
    lines = []
    for s in summaries:
        if s["list"] not in ANCHORS:
            continue
        st, tg = s["stock"], s["tunegate"]
        measured = {
            "ratio": None if st["note"] or tg["note"] else _div(tg["wall"], st["wall"]),
            "chosen_best": tg["chosen_best"], "check_share": s["check_share"],
            "warm_overhead_s": s["warm_overhead_s"]}
        parts = []
        for goal, limit in GOALS.items():
            value = measured[goal]
            if value is None:
                parts.append(f"{goal} not measured")
            else:
                verdict = "met" if value <= limit else f"**missed** by {value / limit:.2f}×"
                parts.append(f"{goal} {value:.3g} ≤ {limit}: {verdict}")
        lines.append(f"- **{s['list']}**: " + "; ".join(parts))
    return "\n".join(lines)


def bandwidth_table(summaries: list[dict]) -> str:
    bw = [s for s in summaries if "gbps" in s]
    if not bw:
        return ""
    lines = ["| list | best correct config, GB/s | device-to-device copy, GB/s | share |",
             "|---|---|---|---|"]
    lines += [f"| {s['list']} | {s['gbps']:.0f} | {s['copy_gbps']:.0f} | "
              f"{100 * s['gbps'] / s['copy_gbps']:.0f}% |" for s in bw]
    return "\n".join(lines)


def environment_line(env: dict) -> str:
    where = (f"{env.get('gpu')} (sm_{str(env.get('capability', '')).replace('.', '')}) × "
             f"{env.get('gpus')}, driver {env.get('driver')}" if not env.get("interpreter")
             else "no GPU: Triton's interpreter")
    return (f"{where}, {env.get('cpus')} CPU cores, torch {env.get('torch')}, triton "
            f"{env.get('triton')}, Python {env.get('python')}, commit `{env.get('commit')}`, "
            f"{env.get('date')}" + (" — **smoke run: toy sizes, 2 configs**"
                                    if env.get("smoke") else ""))


def render(records: list[dict]) -> str:
    order = {name: i for i, name in enumerate(ANCHORS)}
    records = sorted(records, key=lambda r: order.get(r.get("list"), len(order)))
    summaries = [summarize(r) for r in records]
    notes: dict[str, list[str]] = {}  # one line per distinct note, naming every list it hit
    for s in summaries:
        for phase, note in (("truth", s["truth_note"]), ("stock", s["stock"]["note"]),
                            ("tunegate", s["tunegate"]["note"]), ("warm", s["warm"]["note"])):
            if note:
                notes.setdefault(f"{phase}: {note}", []).append(s["list"])
    parts = [environment_line(records[0]["environment"]), main_table(summaries),
             "Where tunegate's time goes:", breakdown_table(summaries)]
    if any(s["list"] in ANCHORS for s in summaries):
        parts += ["Against the goals of issue 10:", goals(summaries)]
    parts += [bandwidth_table(summaries)]
    if notes:
        parts += ["Phases that did not run:",
                  "\n".join(f"- {', '.join(lists)} — {note}" for note, lists in notes.items())]
    return "\n\n".join(p for p in parts if p) + "\n"


def main() -> None:
    loaded = [json.loads(Path(p).read_text()) for p in sys.argv[1:]]
    records = [r for r in loaded if "candidates" in r]  # a benchmark list's, not other results
    if not records:
        raise SystemExit("usage: report.py RESULT.json ...")
    sys.stdout.write(render(records))


if __name__ == "__main__":
    main()
