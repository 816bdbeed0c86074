"""Turn bench_gpu.py's JSON files into the tables of benchmarks/RESULTS.md.

    python benchmarks/report.py benchmarks/results/*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def _fmt(x: float | None, spec: str) -> str:
    return "—" if x is None else format(x, spec)


def summarize(record: dict) -> dict:
    rows = record["truth"]["rows"]
    times = {_key(r["config"]): r for r in rows}
    correct = [r for r in rows if r.get("correct") and r.get("ms") is not None]
    best = min(correct, key=lambda r: r["ms"]) if correct else None
    out = {"kernel": record["kernel"], "candidates": record["candidates"],
           "wrong": sum(1 for r in rows if not r.get("correct")),
           "best_ms": best["ms"] if best else None}
    for tuner in ("stock", "tunegate"):
        data = record[tuner]
        choice = data.get("choice")
        row = times.get(_key(choice)) if choice else None
        out[tuner] = {
            "ratio": row["ms"] / best["ms"] if row and best else None,
            "wall": data.get("wall_s"),
            "right": (data.get("correct") if tuner == "stock"
                      else (row.get("correct") if row else None)),
            "failed": data.get("failed"),
        }
    tg = record["tunegate"]
    out["check_share"] = tg["check_s"] / tg["wall_s"] if tg.get("wall_s") else None
    out["excluded"] = {k: v for k, v in tg.get("removals", {}).items() if v}
    out["rejected"] = tg.get("statuses", {}).get("wrong")
    out["measured"] = tg.get("measured")
    truth = record["truth"]
    if "copy_gbps" in truth and best:
        out["gbps"] = truth["kernel_bytes"] / best["ms"] / 1e6
        out["copy_gbps"] = truth["copy_gbps"]
    return out


def table(records: list[dict]) -> str:
    head = ("| kernel | candidates (wrong) | best correct ms | stock: chosen/best, right? | "
            "tunegate: chosen/best, right? | wall tunegate/stock | check share | "
            "excluded by policy | rejected by check |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for rec in records:
        s = summarize(rec)
        st, tg = s["stock"], s["tunegate"]

        def verdict(t: dict) -> str:
            if t["failed"] or t["ratio"] is None and t["right"] is None:
                return "no config returned" if t["failed"] else "—"
            right = "right" if t["right"] else "**WRONG**"
            return f"{_fmt(t['ratio'], '.3f')}, {right}"

        wall = (tg["wall"] / st["wall"]) if tg["wall"] and st["wall"] else None
        excluded = ", ".join(f"{k}: {v}" for k, v in s["excluded"].items()) or "0"
        lines.append(
            f"| {s['kernel']} | {s['candidates']} ({s['wrong']}) | {_fmt(s['best_ms'], '.4f')} | "
            f"{verdict(st)} | {verdict(tg)} | {_fmt(wall, '.2f')} "
            f"({_fmt(tg['wall'], '.1f')} s / {_fmt(st['wall'], '.1f')} s) | "
            f"{_fmt(s['check_share'] and 100 * s['check_share'], '.1f')}% | {excluded} | "
            f"{s['rejected'] if s['rejected'] is not None else '—'} |")
    bw = [summarize(r) for r in records if "gbps" in summarize(r)]
    if bw:
        lines += ["", "| kernel | best correct config, GB/s | device-to-device copy, GB/s | share |",
                  "|---|---|---|---|"]
        for s in bw:
            lines.append(f"| {s['kernel']} | {s['gbps']:.0f} | {s['copy_gbps']:.0f} | "
                         f"{100 * s['gbps'] / s['copy_gbps']:.0f}% |")
    return "\n".join(lines)


def main() -> None:
    records = [json.loads(Path(p).read_text()) for p in sys.argv[1:]]
    env = records[0]["environment"]
    print(f"{env['gpu']} (sm_{env['capability'].replace('.', '')}), driver {env['driver']}, "
          f"torch {env['torch']}, triton {env['triton']}, {env['date']}\n")
    print(table(records))


if __name__ == "__main__":
    main()
