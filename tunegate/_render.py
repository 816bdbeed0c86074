"""Text for people: aligned tables and the explain report. The CLI prints what these return."""

from __future__ import annotations

import re
import textwrap
from typing import Any, Sequence

from .policy import Environment, LayerReport, Verdict

__all__ = ["escape", "explanation", "layer_report", "table"]

# C0 and C1 controls (ANSI escapes start with one), DEL, and the invisible or reordering
# format characters that could make a rule's text lie about what is on the screen.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: Any, *, keep_newlines: bool = False) -> str:
    """`text` safe to print on a terminal: control and format characters written as `\\x1b`
    escapes, so text from a policy file or kernel cannot drive the terminal."""
    text = str(text)
    if keep_newlines:
        return "\n".join(_UNSAFE.sub(_escaped, line) for line in text.split("\n"))
    return _UNSAFE.sub(_escaped, text)


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


def explanation(verdict: Verdict, config_text: str, env: Environment, kernel: str | None,
                history: list[dict[str, Any]] | None = None) -> str:
    """The whole explain report: verdict, matching rules, possible rules, inactive rules."""
    facts = env.describe()
    env_line = ", ".join(f"{k} {facts[k]}" for k in ("triton", "torch", "device", "capability"))
    if env.overridden:
        env_line += f"  (set by hand: {', '.join(env.overridden)})"
    out = [
        f"config   {config_text}",
        f"verdict  {verdict.status.upper()}",
        f"env      {env_line}",
        f"kernel   {kernel or 'none given: kernel traits are unknown'}",
    ]
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
            out.append(f"  {h['when']}  problem {h['problem']}: {h['summary']}")
            for k, v in (h.get("evidence") or {}).items():
                out.append(f"      {k}: {v}")
    return "\n".join(out)
