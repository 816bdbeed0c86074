"""`tunegate policy suggest`: a rule, in TOML, that would have removed the configs the accuracy
check quarantined, and none of the configs of the same kernel that passed, for a person to
review. The match is the simplest one found: one comparison the wrong configs share, else two
joined by `and`, else such conjunctions joined by `or`; each is evaluated as the loader will."""

from __future__ import annotations

import functools
import itertools
import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from ..outcome import Outcome
from ..policy import detect_traits
from ..policy.binding import bind
from ..policy.predicate import MISSING, Predicate
from ..policy.rules import Rule
from ..policy.verdict import features_used
from ..space.space import Config
from .store import Store
from .task import Task

__all__ = ["Suggestion", "render_suggestions", "suggest"]

_MAX_TERMS = 8  # an `or` of more conjunctions than this is a list, not a rule


class Suggestion(BaseModel):
    """A proposed rule for one kernel and the evidence it rests on."""

    kernel: str
    rule_id: str
    match: str | None  # None: no predicate separates the wrong configs from the right ones
    wrong: list[str]
    passed: list[str]
    evidence: list[str]  # one quarantine reason per wrong config
    features: list[str] = []  # used by every wrong config, not by every passed one
    loops: dict[str, Any] = {}  # feature -> the loops of the first wrong config that use it
    traits: list[str] = []  # the kernel's traits, when its task was given
    toml: str | None


def _literal(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str) and "'" not in value:
        return f"'{value}'"
    return None  # lists (Helion per-loop fields) and None are left to the person


def _nameable(name: str, literal: str) -> bool:
    """Whether a rule may compare `name` with `literal`: the loader's own check."""
    try:
        Rule(id="x", title="x", action="disable", reason="x", match=f"{name} == {literal}")
    except ValidationError:
        return False
    return True


def _atoms(configs: list[Config], wrong: list[Config]) -> list[str]:
    """Comparisons over the parameters these configs set, that hold for some wrong config."""
    values: dict[str, set[Any]] = {}
    for c in configs:
        for name, v in c.values.items():
            if _literal(v) is not None:
                values.setdefault(name, set()).add(v)
    atoms = []
    for name in sorted(values):
        seen = sorted(values[name], key=lambda v: (str(type(v)), v))
        if len(seen) < 2 or not _nameable(name, _literal(seen[0]) or "0"):
            continue  # one value everywhere cannot tell wrong from right
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen)
        bad = {c.values.get(name) for c in wrong}
        for v in seen:
            atoms.append(f"{name} == {_literal(v)}")
            if numbers:
                atoms += [f"{name} >= {_literal(v)}", f"{name} <= {_literal(v)}"]
        members = [v for v in seen if v in bad]
        if 1 < len(members) < len(seen):
            atoms.append(f"{name} in [{', '.join(_literal(v) or '' for v in members)}]")
    return atoms


@functools.lru_cache(maxsize=65536)
def _parsed(text: str) -> Predicate:
    return Predicate(text)


def _holds(text: str, config: Config) -> bool:
    return _parsed(text).evaluate(lambda n: config.values.get(n, MISSING)).holds


def _separate(wrong: list[Config], passed: list[Config], atoms: list[str]) -> str | None:
    """The simplest predicate true for every wrong config and false for every passed one."""
    def covers(term: str) -> frozenset[int]:
        return frozenset(i for i, c in enumerate(wrong) if _holds(term, c))

    # (term, the wrong configs it covers) for terms no passed config satisfies, simplest first
    terms = atoms + [f"{a} and {b}" for a, b in itertools.combinations(atoms, 2)]
    clean = [(t, covers(t)) for t in terms if not any(_holds(t, c) for c in passed)]
    everything = frozenset(range(len(wrong)))
    for term, hit in clean:
        if hit == everything:
            return term
    chosen: list[str] = []
    left = set(everything)
    while left and len(chosen) < _MAX_TERMS:
        term, hit = max(clean, key=lambda t: (len(t[1] & left), -len(t[0])),
                        default=("", frozenset()))
        if not hit & left:
            return None
        chosen.append(f"({term})" if " and " in term else term)
        left -= hit
    return " or ".join(chosen) if not left else None


def _kebab(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "kernel"


def _shared_features(task: Task, wrong: list[Config], passed: list[Config]
                     ) -> tuple[list[str], dict[str, Any], list[str]]:
    """(features every wrong config uses and some passed one does not, their loops in the
    first wrong config, the kernel's traits)."""
    traits = detect_traits(task.kernel)
    binding = bind(task.space, traits)
    used = [features_used(c, task.space, binding) for c in wrong]
    shared = set(used[0]).intersection(*used[1:])
    telling = sorted(f for f in shared
                     if not all(f in features_used(c, task.space, binding) for c in passed))
    return telling, {f: used[0][f] for f in telling}, sorted(traits.traits)


def _toml(kernel: str, rule_id: str, match: str, wrong: list[str], passed: int,
          evidence: list[str], store: str, features: list[str], traits: list[str]) -> str:
    reason = (f"Quarantined by tunegate's accuracy check in {store}: {len(wrong)} config(s) of "
              f"{kernel} wrong, {passed} right; every wrong one matches, no right one does. "
              f"First: {wrong[0]}: {evidence[0]}")
    return "\n".join([
        f"# Suggested for kernel {kernel} from the quarantine of {store}.",
        "# Review it, and narrow it with [rule.when] (triton, device) before adopting it.",
        "[[rule]]",
        f"id = {json.dumps(rule_id)}",
        f"title = {json.dumps(f'Configs of {kernel} with {match} gave wrong output')}",
        'action = "disable"',
        *([f"features = {json.dumps(features)}"] if features else []),
        f"match = {json.dumps(match)}",
        f"reason = {json.dumps(reason[:2000], ensure_ascii=False)}",
        *([f"# {kernel} has the traits {', '.join(traits)}: `kernel = [...]` in "
           "[rule.when] aims the rule at kernels like it"] if traits else []),
    ]) + "\n"


def suggest(store: Store, task: Task | None = None) -> list[Suggestion]:
    """One suggestion per kernel with quarantined configs, in the order of the store; with
    `task`, only for its kernel, naming the features and loops its wrong configs share."""
    by_kernel: dict[str, dict[str, dict[Config, str]]] = {}
    for kernel, config, status, reason in store.outcomes():
        groups = by_kernel.setdefault(kernel, {Outcome.WRONG: {}, Outcome.OK: {}})
        groups[status].setdefault(config, reason.summary if reason else "")
    out = []
    for kernel, groups in by_kernel.items():
        wrong = list(groups[Outcome.WRONG])
        if not wrong or (task is not None and kernel != task.name):
            continue
        passed = [c for c in groups[Outcome.OK] if c not in groups[Outcome.WRONG]]
        match = _separate(wrong, passed, _atoms(wrong + passed, wrong))
        rule_id = f"suggested-{_kebab(kernel)}"
        texts = [c.text() for c in wrong]
        evidence = [groups[Outcome.WRONG][c] for c in wrong]
        features, loops, traits = (_shared_features(task, wrong, passed) if task is not None
                                   else ([], {}, []))
        out.append(Suggestion(
            kernel=kernel, rule_id=rule_id, match=match, wrong=texts,
            passed=[c.text() for c in passed], evidence=evidence, features=features,
            loops=loops, traits=traits,
            toml=_toml(kernel, rule_id, match, texts, len(passed), evidence, str(store.path),
                       features, traits) if match else None))
    return out


def render_suggestions(suggestions: list[Suggestion]) -> str:
    """The proposed rules as TOML, each after its evidence (as TOML comments)."""
    if not suggestions:
        return "# the store holds no quarantined config: nothing to suggest"
    parts = []
    for s in suggestions:
        lines = [f"# {s.kernel}: {len(s.wrong)} wrong, {len(s.passed)} passed"]
        lines += [f"#   wrong: {w}: {e}"[:300] for w, e in zip(s.wrong, s.evidence)]
        lines += [f"#   passed: {p}" for p in s.passed[:20]]
        lines += [f"#   every wrong config uses {f}" + ("" if on is True else f" (loops {on})")
                  for f, on in s.loops.items()]
        if s.toml is None:
            lines.append("# no comparison of parameter values separates the wrong configs from "
                         "the passed ones: no rule is suggested")
        parts.append("\n".join(lines) + ("\n" + s.toml if s.toml else ""))
    return "\n".join(parts)
