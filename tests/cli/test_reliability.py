"""Issue 18: errors share one base, policy layers fail closed, predicates that cannot match are
refused, long keys cost linear time, and the store says what is wrong with it."""

from __future__ import annotations

import json
import re

import pytest

from tunegate import cli
from tunegate.errors import TunegateError


def _error_classes() -> list[type[Exception]]:
    from tunegate.autotune.evaluator import CheckFailed
    from tunegate.autotune.precompile import PrecompileError
    from tunegate.autotune.runner import BaselineError
    from tunegate.autotune.worker import BaselineFailed, WorkerSetupError
    return [CheckFailed, WorkerSetupError, BaselineFailed, BaselineError, PrecompileError]


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda c: c.__name__)
def test_run_errors_are_tunegate_errors_and_exit_1(cls, monkeypatch, capsys):
    assert issubclass(cls, TunegateError) and issubclass(cls, RuntimeError)

    def fail(args):
        raise cls("the baseline broke")
    monkeypatch.setattr(cli.policy, "cmd_env", fail)
    assert cli.main(["policy", "env"]) == cli.EXIT_DETECTED
    err = capsys.readouterr().err
    assert err.startswith("tunegate: error: the baseline broke") and "Traceback" not in err


SWITCH_OFF = 'schema = 1\n[[rule]]\nid = "pipelined-store-load"\nenabled = false\n'


def _load_problems(folder) -> str:
    """The error text of loading the policy from `folder`, or '' if it loaded."""
    from tunegate.policy import Policy, PolicyError
    try:
        Policy.load(cwd=folder)
    except PolicyError as e:
        return str(e)
    return ""


def test_another_users_policy_file_in_the_starting_folder_is_refused(isolated):
    import os
    stray = isolated / "policies.toml"
    stray.write_text(SWITCH_OFF)
    os.chown(stray, os.getuid() + 4242, -1)
    err = _load_problems(isolated)
    assert f"{stray}:" in err and "owned by uid" in err and "--policy" in err


def test_starting_folder_of_another_user_is_not_searched(isolated, monkeypatch):
    import os

    from tunegate.policy import Policy
    (isolated / "policies.toml").write_text(SWITCH_OFF)
    owner = os.stat(isolated).st_uid
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    assert [n for n, _ in Policy.load(cwd=isolated).layers] == ["built-in"]


def test_unknown_tool_tunegate_key_names_file_line_and_known_keys(isolated):
    pyproject = isolated / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n\n[tool.tunegate]\npolicies = "p.toml"\n')
    err = _load_problems(isolated)
    assert f"{pyproject}:5:" in err and "'policies'" in err and "known: policy" in err


def test_policies_toml_beside_a_pyproject_naming_another_file_is_an_error(isolated):
    (isolated / "policies.toml").write_text(SWITCH_OFF)
    (isolated / "other.toml").write_text("schema = 1\n")
    (isolated / "pyproject.toml").write_text('[tool.tunegate]\npolicy = "other.toml"\n')
    err = _load_problems(isolated)
    assert "other.toml" in err and "policies.toml" in err and "keep one" in err
    (isolated / "pyproject.toml").write_text('[tool.tunegate]\npolicy = "policies.toml"\n')
    assert _load_problems(isolated) == ""


def test_policy_check_warns_per_weakened_rule_and_strict_exits_1(isolated, capsys):
    weak = isolated / "weak.toml"
    weak.write_text(SWITCH_OFF)
    assert cli.main(["policy", "check", str(weak)]) == cli.EXIT_OK
    out, err = capsys.readouterr()
    assert "ok" in out
    warning = [line for line in err.splitlines() if "pipelined-store-load" in line]
    assert len(warning) == 1 and "switched off" in warning[0] and "built-in" in warning[0]
    assert warning[0].startswith(f"tunegate: warning: {weak}:2:")
    assert cli.main(["policy", "check", "--strict", str(weak)]) == cli.EXIT_DETECTED
    capsys.readouterr()
    fine = isolated / "fine.toml"
    fine.write_text("schema = 1\n")
    assert cli.main(["policy", "check", "--strict", str(fine)]) == cli.EXIT_OK
    assert "warning" not in capsys.readouterr().err


def test_policy_check_json_and_strict_over_the_discovered_layers(isolated, capsys):
    """--json is JSON; without FILEs --strict fails where a discovered layer (the project's
    policies.toml here) switches a rule off, so CI can gate on `policy check --strict`."""
    weak = isolated / "weak.toml"
    weak.write_text(SWITCH_OFF)
    assert cli.main(["policy", "check", "--json", "--strict", str(weak)]) == cli.EXIT_DETECTED
    data = json.loads(capsys.readouterr().out)
    assert data["exit"] == 1 and data["files"][0]["switch_offs"] == 1
    assert [o["rule"] for o in data["files"][0]["weakened"]] == ["pipelined-store-load"]
    assert cli.main(["policy", "check", "--strict"]) == cli.EXIT_OK  # only the built-in layer
    capsys.readouterr()
    (isolated / "policies.toml").write_text(SWITCH_OFF)
    assert cli.main(["policy", "check"]) == cli.EXIT_OK
    assert cli.main(["policy", "check", "--strict"]) == cli.EXIT_DETECTED
    capsys.readouterr()
    assert cli.main(["policy", "check", "--strict", "--json"]) == cli.EXIT_DETECTED
    data = json.loads(capsys.readouterr().out)
    assert data["exit"] == 1 and [o["rule"] for o in data["weakened"]] == ["pipelined-store-load"]


def _rule(match: str) -> str:
    return ('schema = 1\n\n[[rule]]\nid = "never"\ntitle = "t"\naction = "disable"\n'
            f'reason = "r"\nmatch = "{match}"\n')


@pytest.mark.parametrize("match, name", [
    ("range_flattens == 1", "range_flattens"), ("num_stages == '2'", "num_stages"),
    ("num_warps in [4, '8']", "num_warps"), ("indexing > 3", "indexing"),
    ("range_flatten == 1 or num_warps == 4", "range_flatten"),
    ("not (maxnreg == true)", "maxnreg"),
])
def test_predicate_type_mismatch_is_an_error_at_the_rules_line(tmp_path, match, name):
    from tunegate.policy import PolicyError, load_file
    path = tmp_path / "p.toml"
    path.write_text(_rule(match))
    with pytest.raises(PolicyError) as e:
        load_file(path)
    text = str(e.value)
    assert text.startswith(f"{path}:") and "'never'" in text and "type mismatch" in text
    assert name in text and "\n" not in text.split("type mismatch")[0]
    line = e.value.problems[0].line
    assert line in (3, 8)  # the rule's [[rule]] or its match line


@pytest.mark.parametrize("match", [
    "range_flattens == true", "num_stages == 2", "maxnreg == none", "indexing == 'block_ptr'",
    "num_warps in [4, 8]", "BLOCK == 'x'", "range_unroll > 1",
])
def test_well_typed_predicates_still_load(tmp_path, match):
    from tunegate.policy import load_file
    path = tmp_path / "p.toml"
    path.write_text(_rule(match))
    assert load_file(path)[0].id == "never"


@pytest.mark.parametrize("match, why", [
    ("1 == 1", "names nothing of the config"), ("true", "names nothing of the config"),
    ("dtypes == 'fp16'", "'fp16' is not a dtype name"),
    ("indexing == 'tensor_desc'", "indexing is never 'tensor_desc'"),
    ("pid_type in ['flat', 'nope']", "pid_type is never 'nope'"),
    ("num_stages in []", "num_stages in [] is constant"),
])
def test_a_predicate_that_cannot_depend_on_the_config_is_an_error(tmp_path, match, why):
    """A constant match (all configs or none) or a misspelt value (silently never matching)."""
    from tunegate.policy import PolicyError, load_file
    path = tmp_path / "p.toml"
    path.write_text(_rule(match))
    with pytest.raises(PolicyError, match=re.escape(why)):
        load_file(path)


@pytest.mark.parametrize("match", ["dtypes == 'float8_e4m3fn'", "dtypes in ['bfloat16', 'int8']",
                                   "indexing in ['pointer', 'block_ptr']",
                                   "num_stages not in [1]", "dtypes != 'float32'"])
def test_predicates_over_real_values_still_load(tmp_path, match):
    from tunegate.policy import load_file
    path = tmp_path / "p.toml"
    path.write_text(_rule(match))
    assert load_file(path)[0].id == "never"


def test_a_policy_file_saved_with_a_byte_order_mark_loads(tmp_path):
    from tunegate.policy import load_file
    path = tmp_path / "p.toml"
    path.write_bytes(b"\xef\xbb\xbf" + _rule("num_stages > 2").encode())
    [rule] = load_file(path)
    assert rule.id == "never" and rule.source.line == 3


def test_non_ascii_digits_are_not_numbers_in_predicates():
    from tunegate.policy.predicate import Predicate, PredicateSyntaxError
    with pytest.raises(PredicateSyntaxError, match="unexpected character"):
        Predicate("num_warps == \u0661\u0662")


@pytest.mark.parametrize("text", ["BLOCK=32, BLOCK=64", '{"BLOCK": 32, "BLOCK": 64}',
                                  "helion.Config(num_warps=4, num_warps=8)"])
def test_duplicate_keys_in_config_text_are_an_error_naming_the_key(text):
    from tunegate.space.helion import parse_config_text
    from tunegate.space.space import InvalidConfig
    with pytest.raises(InvalidConfig, match="given twice") as e:
        parse_config_text(text)
    assert "'BLOCK'" in str(e.value) or "'num_warps'" in str(e.value)


@pytest.mark.parametrize("form", ["{key} = 1\n", "[{key}]\n", "[[rule]]\n{key} = 1\n",
                                  "x = {{{key} = 1}}\n", "x = [{{{key} = [1.5, 2.5]}}]\n"])
def test_a_long_dotted_key_is_refused_quickly(tmp_path, form):
    import time

    from tunegate.policy import PolicyError, load_file
    from tunegate.policy.loader import MAX_FILE_BYTES
    path = tmp_path / "p.toml"
    head = "schema = 1\n"
    parts = (MAX_FILE_BYTES - len(head) - 40) // 2
    path.write_text(head + form.format(key=".".join(["a"] * parts)))
    assert MAX_FILE_BYTES - 64 < path.stat().st_size <= MAX_FILE_BYTES
    started = time.monotonic()
    with pytest.raises(PolicyError, match="dotted key of more than 32 parts"):
        load_file(path)
    assert time.monotonic() - started < 5


def test_many_short_dotted_keys_in_a_full_size_file_load_quickly(tmp_path):
    import time

    from tunegate.policy import PolicyError, load_file
    path = tmp_path / "p.toml"
    key = ".".join(["k"] * 30)
    lines = [f"x{i} = {{{key} = 1.5, y.z = 2}}" for i in range(3000)]
    path.write_text("schema = 1\n" + "\n".join(lines)[:250_000].rsplit("\n", 1)[0] + "\n")
    started = time.monotonic()
    with pytest.raises(PolicyError, match="unknown top-level key"):
        load_file(path)
    assert time.monotonic() - started < 5


# -- the store ---------------------------------------------------------------------------------
def _store_with_one_best(path):
    import sqlite3

    from tunegate.autotune import Store
    Store(path)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO best (task, kernel, problem, env, policy, config, time_ms, "
                   "created, kernel_name) VALUES ('t', 'k', 'n=8', 'e', 'p', '{\"BLOCK\": 32}', "
                   "3.0, 1.0, 'copy')")
    return path


def test_a_store_restored_from_a_dump_keeps_its_bests(tmp_path):
    import sqlite3

    from tunegate.autotune import Store
    from tunegate.autotune.store import SCHEMA_VERSION
    source = sqlite3.connect(_store_with_one_best(tmp_path / "a.sqlite"))
    restored = tmp_path / "restored.sqlite"
    with sqlite3.connect(restored) as db:
        db.executescript("\n".join(source.iterdump()))  # what `sqlite3 .dump` gives back
        assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    best, = Store(restored).bests()
    assert best.kernel_name == "copy" and best.time_ms == 3.0
    with sqlite3.connect(restored) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_another_programs_database_is_refused_and_left_alone(tmp_path):
    import sqlite3

    from tunegate.autotune import Store
    from tunegate.autotune.store import StoreError
    path = tmp_path / "app.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(StoreError, match="not a tunegate tuning store.*users"):
        Store(path)
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        assert tables == {"users"} and db.execute("PRAGMA user_version").fetchone()[0] == 0


@pytest.mark.parametrize("kind", ["folder", "FIFO"])
def test_a_store_path_that_is_not_a_file_says_so(tmp_path, kind):
    import os

    from tunegate.autotune import Store
    from tunegate.autotune.store import StoreError
    path = tmp_path / "store"
    path.mkdir() if kind == "folder" else os.mkfifo(path)
    with pytest.raises(StoreError, match=f"is a {kind}, not a file") as e:
        Store(path)
    assert "damaged" not in str(e.value)


@pytest.mark.parametrize("message, advice", [
    ("database or disk is full", "disk is full"),
    ("attempt to write a readonly database", "read-only"),
    ("database is locked", "lock"),
    ("file is not a database", "damaged"),
])
def test_store_errors_get_advice_for_their_cause(tmp_path, message, advice):
    import sqlite3

    from tunegate.autotune import Store
    advice_text = Store(tmp_path / "s.sqlite")._advice(sqlite3.OperationalError(message))
    assert advice in advice_text
    assert advice == "damaged" or "move it away" not in advice_text


def test_a_read_only_store_can_be_listed(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    if os.getuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to make a file read-only for ourselves")
    folder = tmp_path / "ro"
    folder.mkdir()
    path = _store_with_one_best(folder / "s.sqlite")
    path.chmod(0o444)
    folder.chmod(0o555)
    try:
        drop = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]
        run = [sys.executable, "-m", "tunegate", "store", "list", "--store", str(path)]
        listed = subprocess.run(drop + run, capture_output=True, text=True, timeout=120)
        assert listed.returncode == 0 and "copy" in listed.stdout, listed.stderr
        prune = run[:4] + ["prune", "--kernel", "copy", "--store", str(path)]
        pruned = subprocess.run(drop + prune, capture_output=True, text=True, timeout=120)
        assert pruned.returncode == 2 and "read-only" in pruned.stderr, pruned.stderr
        assert "damaged" not in pruned.stderr and "Traceback" not in pruned.stderr
    finally:
        folder.chmod(0o755)


def test_after_one_lock_timeout_later_writes_fail_fast(tmp_path):
    import sqlite3
    import time

    from tunegate.autotune import Store
    from tunegate.autotune.store import StoreError
    path = tmp_path / "s.sqlite"
    store = Store(path, timeout=0.6)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreError, match="lock"):
            store.clear_quarantine()
        assert time.monotonic() - started >= 0.5
        started = time.monotonic()
        with pytest.raises(StoreError, match="still locked.*not waiting again"):
            store.clear_quarantine()
        assert time.monotonic() - started < 0.3
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.clear_quarantine() == 0  # free again: the next write goes through


@pytest.mark.parametrize("digit, ascii_digit", [("\u0662", "2"), ("\uff12", "2")])
def test_non_ascii_digits_in_options_are_refused(tmp_path, digit, ascii_digit, capsys):
    store = str(tmp_path / "s.sqlite")
    for argv in (["space", "show", "--blocks", "{}"],
                 ["store", "prune", "--older-than", "{}", "--store", store]):
        assert cli.main([a.format(ascii_digit) for a in argv]) == cli.EXIT_OK
        capsys.readouterr()
        assert cli.main([a.format(digit) for a in argv]) == cli.EXIT_USAGE
        err = capsys.readouterr().err
        assert "tunegate: error:" in err and "Traceback" not in err


@pytest.mark.parametrize("text", ["BLOCK=\u0661\u0662", '{"BLOCK": \u0661\u0662}',
                                  "BLOCK=\uff11\uff12"])
def test_non_ascii_digits_in_config_text_are_refused(text):
    from tunegate.space.helion import parse_config_text
    from tunegate.space.space import InvalidConfig
    with pytest.raises(InvalidConfig):
        parse_config_text(text)


def test_another_users_pyproject_is_refused_but_a_file_it_names_is_not_checked(isolated):
    import os
    shared = isolated / "shared.toml"
    shared.write_text("schema = 1\n")
    os.chown(shared, os.getuid() + 4242, -1)  # e.g. a team's file: named on purpose
    pyproject = isolated / "pyproject.toml"
    pyproject.write_text('[tool.tunegate]\npolicy = "shared.toml"\n')
    assert _load_problems(isolated) == ""
    os.chown(pyproject, os.getuid() + 4242, -1)
    assert f"{pyproject}:" in _load_problems(isolated)
