"""Fuzzing the policy side: any file, predicate or `--env` value loads or fails cleanly.

"Cleanly" means PolicyError (every problem naming the file and a real line), PredicateSyntaxError
or InvalidEnvironment, never another exception; and `policy check` agrees with the commands that
load the file as a layer.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import (FUZZ, env_keys, env_values, located, policy_bytes, policy_texts,
                              predicate_texts, valid_rules)
from tunegate.cli import main
from tunegate.policy import (ENV_FACTS, Environment, InvalidEnvironment, Policy, PolicyError, Predicate,
                             PredicateSyntaxError, load_file)
from tunegate.policy.predicate import MISSING
from tunegate.space import helion_space

_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]")
SPACE = helion_space(blocks=1, loops=2)
ENV = Environment(triton="3.6.0", device="cuda", capability="9.0")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for every example (hypothesis runs many examples per test)."""
    return tmp_path_factory.mktemp("fuzz")


def _write(folder: Path, data: bytes) -> Path:
    path = folder / "policies.toml"
    path.write_bytes(data)
    return path


def _load_or_problems(path: Path) -> list | None:
    """None if the file loads; else its problems, each checked to name the file and a line."""
    try:
        load_file(path)
        return None
    except PolicyError as e:
        lines = path.read_bytes().count(b"\n") + 1
        for p in e.problems:
            assert p.file == str(path), p
            assert isinstance(p.line, int) and 1 <= p.line <= lines, (p, lines)
            assert p.message and str(p).startswith(f"{path}:{p.line}:"), p
            assert not _CONTROL.search(str(p)), p  # what the file says cannot drive a terminal
        return e.problems


@FUZZ
@given(policy_bytes())
def test_any_policy_file_loads_or_names_file_and_line(folder, data):
    _load_or_problems(_write(folder, data))


@FUZZ
@given(valid_rules(), st.integers(0, 2**32))
def test_valid_drafts_load_with_each_rule_on_its_header_line(folder, rules, seed):
    text, where = located(rules)
    loaded = load_file(_write(folder, text.encode()))
    assert [(r.id, r.source.line) for r in loaded] == [
        (r["id"], where[("rule", i)]) for i, r in enumerate(rules)]
    assert [(r.title, r.reason) for r in loaded] == [(r["title"], r["reason"]) for r in rules]
    # The verdict of all rules is what each rule says alone, the strongest action deciding.
    config = SPACE.sample(random.Random(seed))
    verdict = Policy(loaded).explain(config, SPACE, ENV)
    alone = {r.id: Policy([r]).explain(config, SPACE, ENV) for r in loaded}
    hits = {rid: v.matched[0].action for rid, v in alone.items() if v.matched}
    assert {m.rule: m.action for m in verdict.matched} == hits
    assert verdict.status == ("excluded" if "disable" in hits.values() else
                              "experimental" if hits else "allowed")


def _run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


@FUZZ
@given(policy_texts)
def test_policy_check_and_explain_agree(folder, text):
    path = _write(folder, text.encode("utf-8", "surrogatepass"))
    check, check_err = _run("policy", "check", str(path))
    explain, explain_err = _run("policy", "explain", "num_warps=4, range_num_stages=[2]",
                                "--policy", str(path), "--env", "device=cuda",
                                "--env", "triton=3.6.0", "--env", "capability=9.0")
    assert check in (0, 2) and explain in (0, 2)
    assert (check == 0) == (explain == 0), (check_err, explain_err)
    if check:
        assert check_err.startswith("tunegate: error: ") and f"{path}:" in check_err
        assert check_err.splitlines()[0] == explain_err.splitlines()[0]


_ATOMS = st.builds("{} {} {}".format,
                   st.sampled_from(["range_num_stages", "num_warps", "block_sizes", "BLOCK_M"]),
                   st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), st.integers(0, 4))
_WELL_FORMED = st.recursive(_ATOMS, lambda sub: st.one_of(
    st.builds("({}) and ({})".format, sub, sub), st.builds("({}) or ({})".format, sub, sub),
    st.builds("not ({})".format, sub)), max_leaves=6)
"""Predicates that parse: comparisons under `and`, `or` and `not`."""


@FUZZ
@given(st.one_of(predicate_texts, _WELL_FORMED))
def test_any_predicate_parses_or_points_at_the_problem(text):
    try:
        pred = Predicate(text)
    except PredicateSyntaxError as e:
        assert 0 <= e.pos <= len(text)
        return
    values = {"num_warps": 4, "range_num_stages": (1, 3), "block_sizes": (64,)}

    def holds(**changed):
        return pred.evaluate(lambda name: {**values, **changed}.get(name, MISSING)).holds

    for name, pos in pred.names():  # each name is pointed at where the text writes it
        assert text[pos:pos + len(name)].lower() == name.lower(), (name, pos)
    with contextlib.suppress(PredicateSyntaxError):  # nested or long past the limits
        assert Predicate(f"not ({text})").evaluate(
            lambda name: values.get(name, MISSING)).holds is not holds()
    if pred.is_any_decomposable():  # what the region relies on to narrow a per-loop domain
        assert holds() == (holds(range_num_stages=(1,)) or holds(range_num_stages=(3,)))


@FUZZ
@given(st.dictionaries(env_keys, env_values, min_size=1, max_size=3))
def test_any_env_override_is_taken_or_named(overrides):
    try:
        env = Environment().with_overrides(overrides)
    except InvalidEnvironment as e:
        assert "environment fact" in str(e)
        return
    assert set(overrides) <= set(env.overridden)
    for key, value in overrides.items():  # the last value given for a fact is the one taken
        shown = "unknown" if value is None or value.lower() in ("unknown", "none") else value
        assert env.describe()[key] == shown, (key, value)
    again = Environment(**{k: env.fact(k) for k in ENV_FACTS})  # the same facts, not overridden
    assert env.fingerprint() == again.fingerprint()
    assert (env.fingerprint() == Environment().fingerprint()) == (
        all(env.fact(k) is None for k in ENV_FACTS))


_WRONG = {  # for each key, values of a type it never takes
    "string": st.one_of(st.integers(), st.booleans(), st.floats(allow_nan=False),
                        st.lists(st.text(max_size=3), max_size=2)),
    "strings": st.one_of(st.text(max_size=5), st.integers(), st.booleans(),
                         st.lists(st.integers(), min_size=1, max_size=2)),
    "boolean": st.one_of(st.sampled_from(["no", "off", "false", "0"]), st.integers(0, 1),
                         st.floats(0, 1)),
}
_KIND = {"id": "string", "title": "string", "action": "string", "match": "string",
         "reason": "string", "bugs": "strings", "features": "strings", "enabled": "boolean",
         "triton": "string", "device": "string", "capability": "string", "kernel": "strings"}


@FUZZ
@given(valid_rules(), st.data())
def test_a_wrong_type_is_blamed_on_the_line_that_wrote_it(folder, rules, data):
    index = data.draw(st.integers(0, len(rules) - 1))
    key = data.draw(st.sampled_from(sorted(_KIND)))
    table = "when" if key in ("triton", "device", "capability", "kernel") else None
    target = rules[index].setdefault(table, {}) if table else rules[index]
    target[key] = data.draw(_WRONG[_KIND[key]])
    text, where = located(rules)
    path = _write(folder, text.encode())
    expected = where[("rule", index, table, key) if table else ("rule", index, key)]
    problems = _load_or_problems(path)
    assert problems and any(p.line == expected and key in p.message for p in problems), (
        expected, problems)
