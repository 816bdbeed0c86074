"""Text for people: aligned tables and the explain report. The CLI prints what these return."""

from __future__ import annotations

import re
import shlex
import textwrap
import time
from typing import Any, Sequence

from ._text import UNSAFE
from .outcome import Outcome
from .policy import Environment, KernelTraits, LayerReport, Verdict
from .policy.binding import Binding

__all__ = ["best_entry", "bindings", "escape", "explanation", "kernel_loops", "layer_report",
           "layers_in_brief", "progress_line", "store_listing", "table", "tuning_outcome",
           "tuning_summary", "tunings_table"]



def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: Any, *, keep_newlines: bool = False) -> str:
    """`text` safe to print on a terminal: control and format characters written as `\\x1b`
    escapes, so text from a policy file or kernel cannot drive the terminal."""
    text = str(text)
    if keep_newlines:
        return "\n".join(UNSAFE.sub(_escaped, line) for line in text.split("\n"))
    return UNSAFE.sub(_escaped, text)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns separated by two spaces, with a rule under the header; every cell
    is escaped (see `escape`)."""
    cells = [[escape(c) for c in headers]] + [[escape(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def layer_report(report: LayerReport) -> str:
    """The policy layers that applied, lowest first, and the rules a higher layer overrode."""
    out = ["Policy layers (lowest first)"]
    out.append(textwrap.indent(table(["layer", "rules", "switch-offs", "file"], [
        (layer.name, layer.rules, layer.switch_offs, layer.file) for layer in report.layers]),
        "  "))
    if report.overrides:
        out += ["", "Rules a higher layer overrode"]
        out.append(textwrap.indent(table(["rule", "change", "was", "now", "by"], [
            (o.rule, o.change.upper() if o.weakens else o.change, o.was, o.now,
             f"{o.layer}, {o.source}") for o in report.overrides]), "  "))
    return "\n".join(out)


def _loops(loops: dict[str, list[int]]) -> str:
    return "; ".join(f"{name} at loop {', '.join(map(str, idx))}" for name, idx in loops.items())


def _features(features: dict[str, Any]) -> str:
    out = []
    for name, hit in features.items():
        out.append(name if hit is True else f"{name} (loop {', '.join(map(str, hit))})")
    return ", ".join(out)


def _wrap(text: str, indent: str = "      ") -> str:
    return textwrap.fill(text, width=96, initial_indent=indent, subsequent_indent=indent)


def tuning_outcome(history: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The newest failure of the config under the current task, if its newest trial for some
    problem failed: what the headline reports instead of the policy verdict."""
    newest: dict[str, dict[str, Any]] = {}
    for h in history or []:  # newest first
        if h.get("current"):
            newest.setdefault(h["problem"], h)
    failed = [h for h in newest.values() if Outcome(h["status"]).headline]
    if not failed:
        return None
    h = failed[0]
    return {"headline": Outcome(h["status"]).headline, "status": h["status"],
            "problem": h["problem"], "summary": h["summary"], "evidence": h.get("evidence")}


def _evidence_lines(evidence: dict[str, Any] | None, indent: str) -> list[str]:
    """A reason's evidence, a line a field, for people: draws counted from 1 as its summary
    counts them (`--json` keeps them from 0), fields not measured (None) left out."""
    lines = []
    for k, v in (evidence or {}).items():
        if v is None:
            continue
        if k == "draw" and isinstance(v, int):
            v += 1
        lines.append(f"{indent}{k}: {v}")
    return lines


def layers_in_brief(report: LayerReport) -> list[str]:
    """The layers that applied in one line, and a line for each rule a higher layer weakened or
    switched off: what `tune` and `explain` print so a stray policy file never goes unseen."""
    out = ["policy layers: " + "; ".join(f"{layer.name} {layer.file} ({layer.rules} rules"
                                         + (f", {layer.switch_offs} switched off" if
                                            layer.switch_offs else "") + ")"
                                         for layer in report.layers)]
    out += [f"  {o.rule}: {o.change} by {o.layer} ({o.source}); was {o.was}, now {o.now}"
            for o in report.weakened]
    return out


def explanation(verdict: Verdict, config_text: str, env: Environment, kernel: str | None,
                history: list[dict[str, Any]] | None = None,
                compared_with: str | None = None, layers: LayerReport | None = None) -> str:
    """The whole explain report: verdict (a tuning failure first), matching rules, possible
    rules, inactive rules, recorded history, the policy layers; safe to print on a terminal."""
    facts = env.describe()
    env_line = ", ".join(f"{k} {facts[k]}" for k in ("triton", "torch", "device", "capability"))
    if env.overridden:
        env_line += f"  (set by hand: {', '.join(env.overridden)})"
    outcome = tuning_outcome(history)
    headline = verdict.status.upper() if outcome is None else (
        f"{outcome['headline']} by tuning (policy: {verdict.status})")
    out = [f"config   {config_text}", f"verdict  {headline}"]
    if outcome is not None:
        out.append(f"         problem {outcome['problem']}: {outcome['summary']}")
        out += _evidence_lines(outcome["evidence"], "         ")
    out += [
        f"env      {env_line}",
        f"kernel   {kernel or 'none given: kernel traits are unknown'}",
    ]
    if compared_with is not None:
        out.append(f"checked  against {compared_with}")
    if verdict.features_used:
        out.append(f"features {_features(verdict.features_used)}")
    for action, heading in (("disable", "Excluded by"),
                            ("experimental", "Experimental: accuracy-checked before its timing "
                                             "counts")):
        hits = [m for m in verdict.matched if m.action == action]
        if hits:
            out += ["", heading]
        for m in hits:
            out.append(f"  {m.rule}  ({m.source})")
            out.append(f"      {m.title}")
            if m.bugs:
                out.append(f"      bugs: {', '.join(m.bugs)}")
            what = "; ".join(x for x in (_features(m.features), _loops(m.loops)) if x)
            if what:
                out.append(f"      matched: {what}")
            if m.assumed:
                out.append(_wrap("assumed to match: " + "; ".join(m.assumed.values())))
            out.append(_wrap("why: " + m.reason))
    if verdict.possible:
        out += ["", "Could also apply if these facts were known"]
        for p in verdict.possible:
            out.append(f"  {p.rule}  ({p.action}, {p.source}) needs: {', '.join(p.unknown)}")
            if p.bugs:
                out.append(f"      bugs: {', '.join(p.bugs)}")
    if verdict.inactive:
        out += ["", "Not applied here"]
        out.append(textwrap.indent(table(["rule", "why"], [(i.rule, i.why)
                                                          for i in verdict.inactive]), "  "))
    if history is not None:
        out += ["", "Recorded history"]
        if not history:
            out.append("  no trials of this config are recorded for this kernel")
        for h in history:
            stale = "" if h.get("current", True) else "  (an earlier version of the task)"
            if h["status"] == Outcome.OK and h.get("checked_launches"):
                stale += (f"  checked: {h['checked_launches']} launches on "
                          f"{h['checked_draws']} draws")
            out.append(f"  {h['when']}  problem {h['problem']}: {h['summary']}{stale}")
            out += _evidence_lines(h.get("evidence"), "      ")
    out += [f"note: {n}" for n in verdict.notes]
    if layers is not None:
        out += [""] + layers_in_brief(layers)
    return escape("\n".join(out), keep_newlines=True)


def kernel_loops(traits: KernelTraits) -> str:
    """The loop map: each loop's line, nesting, bounds, options and the traits it holds."""
    head = traits.name + (" — traits: " + ", ".join(sorted(traits.traits))
                          if traits.traits else " — no traits")
    out = [f"kernel   {head}"]
    for feature, evidence in traits.features.items():
        out.append(f"uses     {feature} in every config ({evidence})")
    if not traits.loops:
        return "\n".join(out + ["loops    none"])
    rows = []
    for loop in traits.loops:
        bounds = loop.bounds + (f" ({', '.join(loop.runtime_names)})"
                                if loop.runtime_names else "")
        options = ", ".join(f"{o}={s.describe()}" for o, s in loop.options.items())
        rows.append((loop.index, loop.line, "  " * loop.depth + loop.kind, loop.function,
                     bounds, options or "-", ", ".join(traits.traits_of(loop.index)) or "-"))
    out += ["", table(["loop", "line", "kind", "function", "bounds", "options", "traits"], rows)]
    return "\n".join(out)


def bindings(binding: Binding) -> str:
    """Which parameter drives which feature on which loop, and where that binding came from."""
    rows = [(", ".join(d.parameters) or repr(d.literal), d.feature,
             "kernel-wide" if d.loop is None else f"{d.loop} (line {d.line})",
             d.expr or "-", d.origin) for d in binding.drivers]
    out = [table(["parameter", "feature", "loop", "value", "bound by"], rows)] if rows else []
    out += [f"note: {n}" for n in binding.notes]
    return "\n".join(out)


def _values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def _best_checked(result: Any) -> str:
    if result.reused:
        return "stored earlier" + (", re-checked on a fresh draw"
                                   if any("re-checked" in n for n in result.notes) else "")
    trial = next((t for t in result.trials
                  if t.config == result.best and t.status == Outcome.OK),
                 None)
    return trial.checked() if trial is not None else "-"


def tuning_summary(result: Any, reference: str, store: str | None = None) -> str:
    """A tuning run's `TuneResult` for people: the counts, the best, the rejected configs.

    `store` (the `--store` the run used) goes into the explain hint, or it would read another
    store and find no history."""
    label = "interpreter timing (CPU, not GPU speed)" if result.timing == "interpreter" \
        else "GPU median (do_bench)"
    rows: list[tuple[str, Any]] = [("space", f"{result.space_size} configs"),
                                   ("candidates measured", len(result.trials)),
                                   ("compared with", result.compared_with)]
    hits = {rule: n for rule, n in result.removals.items() if n}
    if not hits:
        rows.append(("excluded by policy", "none"))
    for rule, n in hits.items():
        rows.append((f"excluded by {rule}", n))
    rows += [("rejected by accuracy check", result.count(Outcome.WRONG)),
             ("failed (compile/error/timeout/crash)",
              sum(result.count(s) for s in Outcome if s.failed)),
             ("best time", f"{result.best_time_ms:.4g} ms, {label}"
              if result.best_time_ms is not None else "-"),
             ("best config", _values(result.best or {})),
             ("best config checked", _best_checked(result)),
             ("wall time", f"{result.wall_seconds:.1f} s, of which accuracy checks "
                           f"{result.check_seconds:.1f} s")]
    if result.reused:
        rows.append(("reused", "stored best config, still allowed by the current policy"))
    out = [table(["", ""], rows)]
    rejected = [t for t in result.trials if t.status != Outcome.OK]
    if rejected:
        out.append("\nRejected configs")
        for t in rejected[:10]:
            out.append(f"  {t.status:<13} {_values(t.config)}")
            if t.reason:
                out.append(f"                {t.reason.summary}")
        if len(rejected) > 10:
            out.append(f"  ... and {len(rejected) - 10} more (--json lists them all)")
        first = ", ".join(f"{k}={v!r}" for k, v in rejected[0].config.items())
        hint = f"tunegate policy explain {shlex.quote(first)} --kernel {shlex.quote(reference)}"
        if store is not None:
            hint += f" --store {shlex.quote(store)}"
        out.append(f"\nExplain one:  {hint}")
    out += [f"\nnote: {n}" for n in result.notes]
    if result.interrupted:
        out.append("\nnote: interrupted; the best of what was measured is reported")
    return "\n".join(out)


def best_entry(best: Any) -> dict[str, Any]:
    """A stored `Best` as JSON: kernel, problem, config, time, partial, when."""
    return {"kernel": best.kernel_name, "problem": best.problem, "config": best.config.values,
            "time_ms": best.time_ms, "timing": best.timing, "partial": best.partial,
            "measured": best.measured, "budget": best.budget,
            "when": time.strftime("%Y-%m-%d %H:%M", time.localtime(best.created)),
            "task": best.task, "env": best.env, "policy": best.policy}


def store_listing(bests: Sequence[Any]) -> str:
    """The stored bests as a table, newest first."""
    rows = []
    for b in bests:
        e = best_entry(b)
        partial = f"yes: {b.measured} of {b.budget} configs" if b.partial else "no"
        took = f"{b.time_ms:.4g} ms ({b.timing})" if b.time_ms is not None else "-"
        rows.append((e["kernel"] or "?", b.problem, b.config.text(), took, partial, e["when"]))
    return table(["kernel", "problem", "best", "time", "partial", "when"], rows) + \
        f"\n\n{len(bests)} stored best config(s)"


def tunings_table(tunings: Sequence[Any]) -> str:
    """One row per drop-in tuning: kernel, key, winner (or why none), time, what was lost."""
    rows = []
    for t in tunings:
        lost = [f"{sum(t.excluded.values())} excluded" if t.excluded else "",
                f"{sum(t.rejected.values())} rejected" if t.rejected else ""]
        time = "-" if t.time_ms is None else f"{t.time_ms:.4g} ms"
        why = (t.error or "no config left").split(":")[0]  # the error itself says the rest
        winner = t.winner if t.winner is not None else f"none: {why}"
        lost = ", ".join(x for x in lost if x) or ("" if t.reused else "all kept")
        rows.append((t.kernel, t.key or "-", winner, time,  # a reused best: no new verdicts
                     "reused" if t.reused else f"{t.seconds:.1f} s",
                     f"{t.configs} ({lost})" if lost else str(t.configs)))
    return table(["kernel", "key", "winner", "time", "tuning", "configs"], rows)


def progress_line(event: dict[str, Any]) -> str | None:
    """The line `tune` prints on stderr for one of the tuner's progress events (None: none)."""
    if event["event"] == "start":
        return f"tuning with the {event['strategy']} strategy, up to {event['budget']} configs"
    if event["event"] == "trial":
        t = event["trial"]
        what = f"{t.time_ms:10.4g} ms" if t.time_ms is not None else f"{t.status:>13}"
        if t.status is Outcome.OK and t.stressed:
            what += " (stressed)"
        text = ", ".join(f"{k}={v}" for k, v in t.config.items())
        return f"[{event['n']:>3}] {what:<24} {text}"
    if event["event"] == "winner_check":
        hazards = event.get("hazards")
        why = "" if hazards is None else (
            f" (race hazards: {'; '.join(hazards)})" if hazards else
            " (no race hazard: its fresh draws, one launch each)")
        return f"      stress-checking the fastest: {event['config'].text()}{why}"
    if event["event"] == "stress":
        t = event["trial"]
        return f"      {t.status}: " + (t.reason.summary if t.reason else t.checked())
    return None
