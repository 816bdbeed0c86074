"""Which configs of real libraries' `triton.autotune` lists the shipped policy removes, and why.

Imports every module of the given packages (by default fla-core's `fla` and liger-kernel's
`liger_kernel`), finds each `triton.autotune`'d kernel, reads its traits from its source and
judges each listed config in this machine's environment (or `--env key=value` what-ifs). A
config is "removed" when a disabling rule matches on what is known before any call, "depends on
call" when it matches only because a problem fact (dtypes, tile bytes) is unknown until the
kernel is called, and "checked" when only experimental rules match (kept, stress-checked).

Run on the H200: PYTHONPATH=$PWD python benchmarks/rule_review.py [--json out.json]
On a CPU host, what-if: ... --env device=cuda --env capability=9.0 --env triton=3.6.0
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import pkgutil
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tunegate.kernelfile import chain, jit_function  # noqa: E402
from tunegate.autotune.task import space_from_triton_configs  # noqa: E402
from tunegate.policy import Policy, detect_environment, detect_traits  # noqa: E402
from tunegate.policy.traits import TraitError  # noqa: E402


def modules(package: str) -> Iterator[tuple[str, Any]]:
    """(name, module or the import error's text) for the package and every module under it."""
    try:
        root = importlib.import_module(package)
    except Exception as e:  # noqa: BLE001 - report it, keep going
        yield package, f"{type(e).__name__}: {e}"
        return
    yield package, root
    for info in pkgutil.walk_packages(getattr(root, "__path__", []), package + "."):
        try:
            yield info.name, importlib.import_module(info.name)
        except Exception as e:  # noqa: BLE001 - a module that needs another GPU, say
            yield info.name, f"{type(e).__name__}: {str(e)[:120]}"


def autotuned(module: Any) -> Iterator[tuple[str, Any]]:
    """Each triton Autotuner in a module's globals (under or over @triton.heuristics), also the
    drop-in's (a subclass)."""
    from triton.runtime.autotuner import Autotuner

    for name, obj in vars(module).items():
        tuners = [link for link in chain(obj) if isinstance(link, Autotuner)] \
            if hasattr(obj, "fn") else []
        if tuners:
            yield name, tuners[0]


def review(tuner: Any, policy: Policy, env: Any) -> dict[str, Any]:
    """Per config: removed / depends on call / checked / kept, and the rules that decided."""
    space, points = space_from_triton_configs(tuner.configs)
    traits = detect_traits(jit_function(tuner))
    region = policy.gate(space, env, traits)
    counts: Counter[str] = Counter()
    rules: dict[str, Counter[str]] = {"removed": Counter(), "depends on call": Counter(),
                                      "checked": Counter()}
    for point in points:
        verdict = region.verdict(point)
        disabling = [m for m in verdict.matched if m.action == "disable"]
        sure = [m for m in disabling if not m.assumed]
        kind = ("removed" if sure else "depends on call" if disabling
                else "checked" if verdict.status == "experimental" else "kept")
        counts[kind] += 1
        for m in (sure or disabling or verdict.matched):
            if kind != "kept":
                rules[kind][m.rule] += 1
    return {"configs": len(points), **{k: counts[k] for k in
                                      ("removed", "depends on call", "checked", "kept")},
            "rules": {k: dict(v) for k, v in rules.items() if v},
            "traits": sorted(traits.traits)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", default=["fla", "liger_kernel"])
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", metavar="FILE", help="also write the full report here")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    overrides = dict(item.split("=", 1) for item in args.env)
    env = detect_environment(probe_device=True).with_overrides(overrides)
    policy = Policy.load()
    report: dict[str, Any] = {"env": env.describe(), "kernels": {}, "import_errors": {},
                              "unreadable": {}}
    seen: set[int] = set()
    for package in args.packages:
        for name, module in modules(package):
            if isinstance(module, str):
                report["import_errors"][name] = module
                continue
            for attr, tuner in autotuned(module):
                if id(tuner) in seen:
                    continue
                seen.add(id(tuner))
                where = f"{name}.{attr}"
                try:
                    report["kernels"][where] = review(tuner, policy, env)
                except (TraitError, ValueError) as e:
                    report["unreadable"][where] = f"{type(e).__name__}: {e}"
    print(render(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, sort_keys=True))
    return 0


def render(report: dict[str, Any]) -> str:
    kernels = report["kernels"]
    total = Counter()
    for r in kernels.values():
        total.update({k: r[k] for k in ("configs", "removed", "depends on call", "checked")})
    env = ", ".join(f"{k}={v}" for k, v in report["env"].items())
    out = [f"environment: {env}",
           f"{len(kernels)} autotuned kernels, {total['configs']} configs: "
           f"{total['removed']} removed, {total['depends on call']} depend on the call, "
           f"{total['checked']} kept but stress-checked",
           f"{len(report['import_errors'])} modules did not import; "
           f"{len(report['unreadable'])} kernels could not be read", ""]
    for where, r in sorted(kernels.items()):
        if r["configs"] == r["kept"]:
            continue
        parts = [f"{r[k]} {k}" for k in ("removed", "depends on call", "checked") if r[k]]
        out.append(f"{where}: {r['configs']} configs: {', '.join(parts)}")
        for kind, rules in r["rules"].items():
            out.append(f"    {kind}: " + ", ".join(f"{rule} ({n})" for rule, n in rules.items()))
    for where, why in sorted(report["unreadable"].items()):
        out.append(f"unreadable {where}: {why}")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
