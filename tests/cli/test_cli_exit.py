"""One error tree and one exit map: every public error tunegate defines derives from
TunegateError, and `exit_code` turns each kind into the README's exit code and one line."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import tunegate
from tunegate.cli import main
from tunegate.cli._exit import exit_code
from tunegate.autotune.results import TuneInterrupted, TuneResult
from tunegate.errors import TunegateError, UsageError


def _public_errors() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(tunegate.__path__, "tunegate."):
        if info.name.endswith("__main__"):  # runs the CLI when imported
            continue
        module = importlib.import_module(info.name)
        found += [c for _, c in inspect.getmembers(module, inspect.isclass)
                  if issubclass(c, BaseException) and not issubclass(c, Warning)
                  and not issubclass(c, KeyboardInterrupt)  # an interrupt (exit 130), which
                  # `except Exception` must not catch: not an error
                  and c.__module__ == info.name
                  and not c.__name__.startswith("_")]
    return found


def test_every_public_error_of_tunegate_derives_from_tunegate_error():
    errors = _public_errors()
    assert len(errors) >= 15  # the walk found the package's errors
    assert [e.__qualname__ for e in errors if not issubclass(e, TunegateError)] == []


@pytest.mark.parametrize("error, code", [
    (UsageError("bad --env"), 2),                   # bad input: a ValueError
    (FileNotFoundError("no such file"), 2),
    (BrokenPipeError(), 141),
    (KeyboardInterrupt(), 130),
    (TuneInterrupted(TuneResult(task="t", problem="p", timing="gpu", best=None,
                                best_time_ms=None, trials=[], removals={}, space_size=1)), 130),
])
def test_each_kind_of_error_has_its_exit_code(error, code, capsys):
    assert exit_code(error) == code


def test_a_failed_run_is_a_result_exit_1_in_one_line(capsys):
    from tunegate.autotune import TuneError

    assert exit_code(TuneError("no config computed the right answer")) == 1
    assert capsys.readouterr().err == "tunegate: error: no config computed the right answer\n"


def test_a_bug_is_not_swallowed_by_the_exit_map(capsys):
    assert exit_code(ZeroDivisionError("a bug")) is None
    assert capsys.readouterr().err == ""


def test_a_bad_policy_file_is_exit_2_with_the_schema_hint(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("schema = 1\n[[rule]]\nid = 'Not Kebab'\n")
    assert main(["policy", "check", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("tunegate: error: ") and str(bad) in err[0]
    assert err[-1] == "hint: the policies.toml schema is in the README"


def test_a_reference_to_the_wrong_kind_of_object_is_exit_2(tmp_path, capsys):
    (tmp_path / "k.py").write_text("VALUE = 3\n")
    assert main(["tune", f"{tmp_path / 'k.py'}:VALUE"]) == 2
    assert "names a int, not a tunegate Task" in capsys.readouterr().err
