"""`policy suggest`: from a real store's quarantine, a rule that removes exactly the configs the
accuracy check found wrong, checked by loading it with the real loader and gating the space."""

import json

from tests.conftest import KERNELS, run_cli
from tests.kernels import repro_splitk
from tunegate.autotune import Store, Tuner
from tunegate.autotune.suggest import _separate, render_suggestions, suggest
from tunegate.autotune.worker import TaskRef
from tunegate.policy import Policy, detect_environment, detect_traits
from tunegate.space import Choice, Config, Parameter, Space

TASK = repro_splitk.TASK_WIDE


def tuned_store(tmp_path):
    """A store where tuning the split-K kernel quarantined every SPLIT_K > 1 config."""
    store = Store(tmp_path / "s.sqlite")
    result = Tuner(TASK, TaskRef(str(KERNELS / "repro_splitk.py"), "TASK_WIDE"),
                   policy=Policy([]), store=store, compile_workers=0).run()
    assert {t.status for t in result.trials if t.config["SPLIT_K"] > 1} == {"wrong"}
    assert {t.status for t in result.trials if t.config["SPLIT_K"] == 1} == {"ok"}
    return store, result


def test_the_suggested_rule_removes_exactly_the_quarantined_configs(tmp_path, write_policy):
    store, result = tuned_store(tmp_path)
    [s] = suggest(store, TASK)
    assert s.kernel == TASK.name and s.match == "SPLIT_K >= 2"
    assert s.features == ["split_k"] and s.traits == ["atomics"]
    assert len(s.wrong) == 4 and len(s.passed) == 2
    assert all("out_ptr: 4 of 4 elements wrong" in e for e in s.evidence)
    path = write_policy("schema = 1\n\n" + s.toml)
    env = detect_environment()
    region = Policy.from_files(path).gate(TASK.space, env, detect_traits(TASK.kernel))
    removed = {c for c in TASK.space.configs() if not region.contains(c)}
    wrong = {Config(values=t.config) for t in result.trials if t.status == "wrong"}
    assert removed == wrong
    assert [r.rule for r in region.removals()] == [s.rule_id]


def test_without_the_task_the_rule_is_a_match_alone(tmp_path, write_policy):
    store, _ = tuned_store(tmp_path)
    [s] = suggest(store)
    assert s.features == [] and "features =" not in s.toml
    text = render_suggestions([s])
    assert "# repro_splitk_row_sum: 4 wrong, 2 passed" in text and 'match = "SPLIT_K >= 2"' in text
    assert Policy.from_files(write_policy("schema = 1\n" + s.toml)).rule(s.rule_id)


def test_a_conjunction_or_none_when_one_comparison_cannot_separate():
    space = Space(parameters={"A": Parameter(domain=Choice(choices=(1, 2, 3))),
                              "B": Parameter(domain=Choice(choices=(1, 2)))})
    configs = list(space.configs())
    wrong = [c for c in configs if c.values["A"] >= 2 and c.values["B"] == 1]
    passed = [c for c in configs if c not in wrong]
    from tunegate.autotune.suggest import _atoms

    assert _separate(wrong, passed, _atoms(configs, wrong)) == "A >= 2 and B == 1"
    apart = [c for c in configs if (c.values["A"], c.values["B"]) in ((1, 1), (3, 2))]
    rest = [c for c in configs if c not in apart]
    assert _separate(apart, rest, _atoms(configs, apart)) == \
        "(A == 1 and B == 1) or (A == 3 and B == 2)"
    same = [configs[0]]  # one config both wrong and right: nothing separates them
    assert _separate(same, same, _atoms(same, same)) is None


def test_the_cli_reads_the_store(tmp_path):
    store, _ = tuned_store(tmp_path)
    out = run_cli("policy", "suggest", "--store", str(store.path), "--kernel",
                  f"{KERNELS / 'repro_splitk.py'}:TASK_WIDE", "--json")
    assert out.returncode == 0, out.stderr
    [data] = json.loads(out.stdout)
    assert data["match"] == "SPLIT_K >= 2" and data["features"] == ["split_k"]
    empty = run_cli("policy", "suggest", "--store", str(tmp_path / "none.sqlite"))
    assert empty.returncode == 0 and "nothing to suggest" in empty.stdout
