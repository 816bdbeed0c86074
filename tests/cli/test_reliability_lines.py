"""Issue 18: problems point at the bad item's own line; damaged store rows never crash."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tunegate.autotune import Store
from tunegate.autotune.store import StoreError, TrialKey
from tunegate.policy import PolicyError
from tunegate.policy.loader import load_file
from tunegate.reasons import Reason
from tunegate.space import Config

_RULE = 'id = "{id}", title = "t", action = "{action}", reason = "r", features = ["range_flatten"]'


def _check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tunegate", "policy", "check", str(path)],
                          capture_output=True, text=True, timeout=120)


def test_multiline_array_blames_the_bad_item(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    path.write_text('schema = 1\n\n[[rule]]\nid = "x"\ntitle = "t"\naction = "disable"\n'
                    'reason = "r"\nfeatures = [\n  "range_flatten",\n  "no_such_feature",\n]\n')
    result = _check(path)
    assert result.returncode == 2
    assert f"{path}:10: rule 'x': features: unknown feature 'no_such_feature'" in result.stderr
    assert "Traceback" not in result.stderr


def test_inline_rule_array_blames_the_bad_rule(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    rules = [_RULE.format(id="a", action="disable"), _RULE.format(id="b", action="bogus")]
    path.write_text("schema = 1\nrule = [\n" + "".join(f"  {{{r}}},\n" for r in rules) + "]\n")
    with pytest.raises(PolicyError) as caught:
        load_file(path)
    assert f"{path}:4: rule 'b': action:" in str(caught.value)


def test_inline_bug_reference_blames_its_line(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    path.write_text('schema = 1\n[[rule]]\nid = "x"\ntitle = "t"\naction = "disable"\n'
                    'reason = "r"\nfeatures = ["range_flatten"]\nbugs = [\n  "a/b#1",\n'
                    '  "nope",\n]\n')
    with pytest.raises(PolicyError) as caught:
        load_file(path)
    assert f"{path}:10: rule 'x': bugs: bug reference 'nope'" in str(caught.value)


# -- damaged store rows -----------------------------------------------------------------------
def _key(run: str = "r", problem: str = "n=8") -> TrialKey:
    return TrialKey(run=run, task="t", kernel="k", kernel_name="copy", problem=problem, env="e",
                    policy="p")


def _damage(path: Path, sql: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql)
    db.close()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("damage", [
    "UPDATE best SET config='{not json' WHERE kernel_name='copy'",
    "UPDATE best SET config='[1, 2]' WHERE kernel_name='copy'",
    "UPDATE best SET time_ms='fast' WHERE kernel_name='copy'",
    "UPDATE best SET created='yesterday' WHERE kernel_name='copy'",
])
def test_store_list_skips_a_damaged_best_with_one_warning(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "s.sqlite"
    store = Store(path)
    store.save_best(_key(), Config(values={"BLOCK": 32}), 3.0, "gpu")
    store.save_best(_key(problem="n=16"), Config(values={"BLOCK": 64}), 2.0, "gpu")
    _damage(path, damage + " AND problem='n=8'")
    result = subprocess.run([sys.executable, "-m", "tunegate", "store", "list", "--store",
                             str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    warnings = [line for line in result.stderr.splitlines() if "damaged best row" in line]
    assert len(warnings) == 1 and str(path) in warnings[0] and "row 1" in warnings[0]
    assert "BLOCK=64" in result.stdout


def test_reuse_skips_a_damaged_best_and_save_replaces_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "s.sqlite"
    store = Store(path)
    store.save_best(_key(), Config(values={"BLOCK": 32}), 3.0, "gpu")
    _damage(path, "UPDATE best SET time_ms='fast', measured='x'")
    assert store.best("t", "n=8", "e") is None
    assert store.save_best(_key(), Config(values={"BLOCK": 16}), 9.0, "gpu").time_ms == 9.0
    assert len(_warnings(caplog)) == 2 and "damaged best row 1" in _warnings(caplog)[0]


@pytest.mark.parametrize("damage", [
    "UPDATE trials SET status='weird' WHERE run='bad'",
    "UPDATE trials SET reason='{broken' WHERE run='bad'",
    "UPDATE trials SET time_ms='slow' WHERE run='bad'",
    "UPDATE trials SET created='now' WHERE run='bad'",
    "UPDATE trials SET created=1e300 WHERE run='bad'",
])
def test_history_of_a_damaged_trial_is_a_clear_error(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "s.sqlite"
    store = Store(path)
    config = Config(values={"BLOCK": 32})
    why = Reason(kind="accuracy", summary="max error 1.0")
    store.record(_key("good"), config, "ok", time_ms=1.0, timing="gpu")
    bad = store.record(_key("bad"), config, "wrong", time_ms=2.0, timing="gpu", reason=why)
    _damage(path, damage)
    with pytest.raises(StoreError) as caught:
        store.history("k", config, "t")
    message = str(caught.value)
    assert str(path) in message and f"damaged trials row {bad}" in message
    assert "move it away or delete it" in message and "\n" not in message


def test_a_damaged_reason_still_quarantines_its_config(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "s.sqlite"
    store = Store(path)
    config = Config(values={"BLOCK": 32})
    store.record(_key(), config, "wrong", reason=Reason(kind="accuracy", summary="bad"))
    store.record(_key(), Config(values={"BLOCK": 64}), "wrong",
                 reason=Reason(kind="accuracy", summary="bad"))
    _damage(path, "UPDATE trials SET reason='{broken' WHERE config LIKE '%32%'")
    _damage(path, "UPDATE trials SET config='{broken' WHERE config LIKE '%64%'")
    assert set(store.quarantined("t", "n=8", "e")) == {config}
    assert len(_warnings(caplog)) == 2


def test_store_list_skips_a_best_of_no_showable_time(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).save_best(_key(), Config(values={"BLOCK": 32}), 3.0, "gpu")
    _damage(path, "UPDATE best SET created=67768036191676796")
    result = subprocess.run([sys.executable, "-m", "tunegate", "store", "list", "--store",
                             str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "damaged best row 1: created is 6.7768" in result.stderr


@pytest.mark.interpreter
def test_a_tuning_does_not_reuse_a_damaged_best_and_tunes_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from tests.autotune.test_store_results import tuner

    path = tmp_path / "s.sqlite"
    store = Store(path)
    first = tuner(store).run()
    assert tuner(store).run().reused
    _damage(path, "UPDATE best SET config='{not json', time_ms='fast'")
    again = tuner(store).run()
    assert not again.reused and again.best is not None
    assert any("damaged best row" in w and str(path) in w for w in _warnings(caplog))
    assert store.best(first.task_fingerprint, first.problem, first.env) is not None


def test_explain_of_a_trial_with_an_unknown_status_is_one_clear_error(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.conftest import KERNELS
    from tests.kernels.pipelined_copy import TASK
    from tunegate.cli import main

    path = tmp_path / "s.sqlite"
    key = TrialKey(run="r", task=TASK.fingerprint(), kernel=TASK.kernel_hash(),
                   kernel_name=TASK.name, problem="p", env="e", policy="x")
    row = Store(path).record(key, Config(values={"BLOCK": 64, "STAGES": 2}), "ok", time_ms=1.0)
    _damage(path, "UPDATE trials SET status='maybe'")
    code = main(["policy", "explain", "BLOCK=64, STAGES=2", "--kernel",
                 f"{KERNELS / 'pipelined_copy.py'}:TASK", "--store", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    error, = [line for line in err.splitlines() if line.startswith("tunegate: error:")]
    assert str(path) in error and f"damaged trials row {row}: status is 'maybe'" in error
