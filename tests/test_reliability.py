"""Issue 18: errors share one base, policy layers fail closed, predicates that cannot match are
refused, long keys cost linear time, and the store says what is wrong with it."""

from __future__ import annotations

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
    monkeypatch.setattr(cli, "cmd_env", fail)
    assert cli.main(["policy", "env"]) == cli.EXIT_DETECTED
    err = capsys.readouterr().err
    assert err.startswith("tunegate: error: the baseline broke") and "Traceback" not in err
