"""The CLI fails closed: every option checked before work starts, one error line, no traceback;
closed pipes, damaged stores and a kernel file's own prints are handled."""

import json
import os
import sqlite3
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import KERNELS
from tunegate.autotune import Store
from tunegate.autotune.store import TrialKey
from tunegate.cli import main
from tunegate.reasons import Reason
from tunegate.space import Config

CONFIG = "BLOCK=64, STAGES=2"


def run(capsys, *argv):
    """`tunegate ARGV` in this process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


@pytest.mark.parametrize("argv", [
    ["tune", "x.py", "--budget", "0"], ["tune", "x.py", "--budget", "-3"],
    ["tune", "x.py", "--budget", "many"], ["tune", "x.py", "--seconds", "nan"],
    ["tune", "x.py", "--seconds", "inf"], ["tune", "x.py", "--seconds", "-1"],
    ["tune", "x.py", "--timeout", "0"], ["tune", "x.py", "--timeout", "nan"],
    ["tune", "x.py", "--draws", "0"], ["tune", "x.py", "--draws", "-1"],
    ["tune", "x.py", "--strategy", "bogus"], ["tune", "x.py", "--store", ""],
    ["tune", "x.py", "--stress-min", "0"], ["tune", "x.py", "--stress-seconds", "0"],
    ["tune", "x.py", "--stress-draws", "-2"], ["tune", "x.py", "--seed", "-1"],
    ["tune", "x.py", "--stress-draws", "100000000"],  # every draw is held in memory
    ["tune", "x.py", "--stress-max", "10000000000"],
    ["tune", "x.py", "--stress-min", "9", "--stress-max", "3"],
    ["space", "show", "--loops", "-1"], ["space", "show", "--blocks", "0"],
    ["space", "show", "--loops", "10000"], ["policy", "explain", "a=1", "--store", ""],
    ["store", "list", "--store", ""], ["store", "prune", "--older-than", "nan"],
    ["policy", "check", "--policy="], ["tune", "x.py", "--policy", " "],
    ["tune"], ["bogus-verb"],
])
def test_bad_options_exit_2_with_one_error_line(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("tunegate: error: "), err


def test_a_refused_command_line_with_json_says_so_in_json_too(capsys):
    code, out, err = run(capsys, "tune", "x.py", "--budget", "0", "--json")
    assert code == 2 and err.startswith("tunegate: error: argument --budget")
    assert json.loads(out) == {"error": "argument --budget: must be at least 1, got 0 (see "
                                        "`tunegate tune --help`)", "exit": 2}


def test_cross_field_stress_options_are_a_usage_error_naming_both(capsys):
    code, _, err = run(capsys, "tune", "x.py", "--stress-min", "9", "--stress-max", "3")
    assert code == 2 and err == "tunegate: error: --stress-min 9 is more than --stress-max 3\n"


def test_a_name_that_is_not_a_task_is_a_clean_error(capsys, tmp_path):
    kernel_file = tmp_path / "k.py"
    kernel_file.write_text("N = 5\n")
    code, _, err = run(capsys, "tune", f"{kernel_file}:N")
    assert code == 2 and "names a int, not a tunegate Task" in err, err
    code, _, err = run(capsys, "policy", "explain", "a=1", "--kernel", f"{kernel_file}:N")
    assert code == 2 and "not a kernel or a tunegate Task" in err, err


def test_a_closed_pipe_ends_quietly(capsys, monkeypatch):
    read, write = os.pipe()
    os.close(read)
    closed = os.fdopen(write, "w")
    monkeypatch.setattr(sys, "stdout", closed)
    code = main(["policy", "env", "--no-probe"])
    monkeypatch.undo()
    try:
        closed.close()
    except BrokenPipeError:
        pass
    assert code == 141
    assert "Traceback" not in capsys.readouterr().err


def _damaged_row_store(path, task):
    """A store whose only trial of `CONFIG` has an unreadable reason."""
    store = Store(path)
    key = TrialKey(run="r", task=task.fingerprint(), kernel=task.kernel_hash(),
                   kernel_name=task.name, problem="p", env="e", policy="x")
    store.record(key, Config(values={"BLOCK": 64, "STAGES": 2}), "wrong",
                 reason=Reason(kind="accuracy", summary="s"))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE trials SET reason='{not json'")


def test_a_damaged_store_is_reported_with_what_to_do(capsys, tmp_path):
    from tests.kernels.pipelined_copy import TASK

    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    kernel = f"{KERNELS / 'pipelined_copy.py'}:TASK"
    for argv in (["tune", kernel, "--store", str(garbage)],
                 ["policy", "explain", CONFIG, "--kernel", kernel, "--store", str(garbage)],
                 ["store", "list", "--store", str(garbage)]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and str(garbage) in err and "move it away or delete it" in err, err
    damaged = tmp_path / "damaged.sqlite"
    _damaged_row_store(damaged, TASK)
    code, _, err = run(capsys, "policy", "explain", CONFIG, "--kernel", kernel,
                       "--store", str(damaged))
    assert code == 2 and str(damaged) in err and "move it away or delete it" in err, err


def _filled_store(path):
    store = Store(path)
    for name, b, status in (("alpha", 2, "wrong"), ("alpha", 1, "ok"), ("beta", 1, "wrong")):
        key = TrialKey(run="r", task=f"t-{name}", kernel=f"k-{name}", kernel_name=name,
                       problem="n=8", env="e", policy="x")
        store.record(key, Config(values={"B": b}), status,
                     reason=Reason(kind="accuracy", summary="s") if status == "wrong" else None,
                     time_ms=1.0 if status == "ok" else None)
    key = TrialKey(run="r", task="t-alpha", kernel="k-alpha", kernel_name="alpha",
                   problem="n=8", env="e", policy="x")
    store.save_best(key, Config(values={"B": 1}), 1.0, "interpreter", partial=True,
                    measured=1, budget=4)
    return store


def test_store_command_lists_clears_and_prunes(capsys, tmp_path):
    path = tmp_path / "s.sqlite"
    store = _filled_store(path)
    code, out, _ = run(capsys, "store", "list", "--store", str(path))
    assert code == 0 and "alpha" in out and "yes: 1 of 4 configs" in out and "B=1" in out
    code, out, _ = run(capsys, "store", "list", "--store", str(path), "--json")
    entry, = json.loads(out)
    assert code == 0 and entry["kernel"] == "alpha" and entry["partial"] and entry["budget"] == 4
    for verb in ("clear-quarantine", "list"):
        code, _, err = run(capsys, "store", verb, "--store", str(path), "--kernel", "gamma")
        assert code == 2 and "no kernel named 'gamma'" in err and "alpha, beta" in err
    code, out, _ = run(capsys, "store", "clear-quarantine", "--store", str(path),
                       "--kernel", "beta")
    assert code == 0 and "cleared 1 quarantined trial(s) of beta" in out
    assert list(store.quarantined("t-alpha", "n=8", "e")) and \
        not store.quarantined("t-beta", "n=8", "e")
    code, _, err = run(capsys, "store", "prune", "--store", str(path))
    assert code == 2 and "say what to prune" in err
    code, out, _ = run(capsys, "store", "prune", "--store", str(path), "--older-than", "1")
    assert code == 0 and "pruned 0 best config(s) and 0 trial(s)" in out
    code, out, _ = run(capsys, "store", "prune", "--store", str(path), "--kernel", "alpha")
    assert code == 0 and "pruned 1 best config(s) and 2 trial(s)" in out
    assert store.bests() == [] and store.kernel_names() == []
    code, out, err = run(capsys, "store", "list", "--store", str(tmp_path / "none.sqlite"))
    assert code == 0 and "no tuning store" in err and not (tmp_path / "none.sqlite").exists()


@pytest.mark.interpreter
def test_tune_json_is_not_mixed_with_what_the_kernel_file_prints(capfd, tmp_path):
    """A `module:NAME` reference, whose module and workers print on stdout."""
    code = main(["tune", "tests.kernels.noisy:TASK", "--store", str(tmp_path / "s.sqlite"),
                 "--budget", "2", "--json"])
    out, err = capfd.readouterr()
    assert code == 0, err
    result = json.loads(out)  # stdout is the JSON alone
    assert result["best"] is not None and len(result["trials"]) == 2
    assert "noisy kernel file: imported" in err and "Traceback" not in err


# -- fuzz: whatever the values, the CLI answers 0, 1 or 2 and never with a traceback -----------
_OPTIONS = ["--budget", "--seconds", "--timeout", "--draws", "--strategy", "--seed",
            "--stress-min", "--stress-max", "--stress-seconds", "--stress-draws", "--store"]
_VALUES = st.one_of(st.text(max_size=12), st.integers(-10**30, 10**30).map(str),
                    st.floats(allow_nan=True, allow_infinity=True).map(str),
                    st.sampled_from(["", "0", "-0", "1e309", "nan", "-inf", "1_000", " 3 "]))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=st.lists(st.tuples(st.sampled_from(_OPTIONS), _VALUES), max_size=4))
def test_fuzz_tune_options(capsys, tmp_path, options):
    argv = ["tune", str(tmp_path / "missing.py")]
    for name, value in options:
        argv += [f"{name}={value}"]
    code, _, err = run(capsys, *argv)
    assert code == 2 and err.startswith("tunegate: error: "), err


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(loops=st.one_of(st.integers(-3, 3).map(str), _VALUES),
       blocks=st.one_of(st.integers(-3, 3).map(str), _VALUES))
def test_fuzz_space_show_options(capsys, loops, blocks):
    code, _, err = run(capsys, "space", "show", f"--loops={loops}", f"--blocks={blocks}",
                       "--no-probe", "--json")
    assert code in (0, 2), err


_CONFIG_PIECES = st.sampled_from([
    "helion.Config(", ")", "block_sizes=", "[", "]", "[[", "]]", "{", "}", '"', "'", ",", "=",
    ":", "num_warps", "num_stages", "loop_orders", "-", "not ", "True", "None", "1", "0",
    "99999999999999999999999", "1e400", "nan", "\\", "\x00", "é", " "])
_CONFIG_TEXT = st.one_of(
    st.text(max_size=40), st.lists(_CONFIG_PIECES, max_size=30).map("".join),
    st.integers(1, 3000).map(lambda n: "[" * n), st.integers(1, 3000).map(lambda n: "-" * n),
    st.integers(1, 6000).map(lambda n: '{"a": ' + "9" * n + "}"),
    st.integers(1, 2000).map(lambda n: '{"a": ' + "[" * n + "]" * n + "}"))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@pytest.mark.filterwarnings("ignore")
@given(text=_CONFIG_TEXT)
def test_fuzz_explain_config_text(capsys, text):
    code, _, err = run(capsys, "policy", "explain", "--no-probe", "--", text)
    assert code in (0, 1, 2), err


@pytest.mark.parametrize("argv", [
    ["policy", "verify", "no-such-rule", "--json"],
    ["policy", "explain", "a=1", "--kernel", "no_such_file.py:K", "--json"],
    ["store", "list", "--kernel", "no-such-kernel", "--json"],
    ["policy", "check", "no_such_policy.toml", "--json"],
])
def test_an_error_with_json_is_one_document_on_stdout_too(capsys, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TUNEGATE_STORE", str(tmp_path / "store.sqlite"))
    Store(tmp_path / "store.sqlite")  # an empty store: it knows no kernel
    code, out, err = run(capsys, *argv)
    assert code == 2 and err.startswith("tunegate: error: "), err
    document = json.loads(out)
    assert document["exit"] == 2 and document["error"] in err, (document, err)


def test_a_failed_tune_with_json_prints_one_document(capsys, tmp_path):
    kernel_file = tmp_path / "k.py"
    kernel_file.write_text("N = 5\n")
    code, out, _ = run(capsys, "tune", f"{kernel_file}:N", "--json")
    assert code == 2 and json.loads(out)["best"] is None  # one document: json.loads says so
