"""One outcome vocabulary, typed worker requests and replies, and Config as the one value type.

A real kernel in a real worker process under the interpreter; real SQLite stores.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest

from tunegate.autotune import Store, Tuner
from tunegate.autotune.evaluator import Trial
from tunegate.autotune.messages import (Check, CheckResult, Compile, CompileResult, Stress,
                                        Time, TimeResult)
from tunegate.autotune.mismatch import Mismatch
from tunegate.autotune.results import TuneResult
from tunegate.autotune.store import TrialKey
from tunegate.autotune.stress import StressCheck, StressReport
from tunegate.autotune.worker import TaskRef, Worker
from tunegate.outcome import Outcome
from tunegate.policy import Policy
from tunegate.reasons import Reason
from tunegate.space import Config

KERNEL = '''
import torch
import triton
import triton.language as tl

from tunegate.autotune import Task
from tunegate.space import Choice, Parameter, Space


@triton.jit
def scale(x_ptr, y_ptr, n, FACTOR: tl.constexpr):
    offs = tl.arange(0, 64)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)


def make_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"x_ptr": torch.randn(64, generator=g).to(device),
            "y_ptr": torch.empty(64, device=device), "n": 64}


TASK = Task(name="scale", kernel=scale,
            space=Space(parameters={"FACTOR": Parameter(domain=Choice(choices=(2, 1),
                                                                      default=2))}),
            grid=(1,), make_inputs=make_inputs, outputs=("y_ptr",),
            reference=lambda x_ptr, y_ptr, n: 2 * x_ptr)
'''

RIGHT, WRONG = Config(values={"FACTOR": 2}), Config(values={"FACTOR": 1})


@pytest.fixture
def kernel_file(tmp_path):
    path = tmp_path / "scale.py"
    path.write_text(textwrap.dedent(KERNEL))
    return path


def _key(run: str = "r") -> TrialKey:
    return TrialKey(run=run, task="t", kernel="k", kernel_name="scale", problem="n=64", env="e",
                    policy="p")


@pytest.mark.interpreter
def test_each_request_comes_back_as_its_own_typed_result_with_objects(kernel_file):
    worker = Worker(TaskRef(str(kernel_file), "TASK"), seed=0, baseline_json=None)
    try:
        right = worker.request(Check(RIGHT, draws=2), timeout=120)
        assert right.status is Outcome.OK and isinstance(right.value, CheckResult)
        assert right.value.mismatch is None and right.value.draw == 2
        wrong = worker.request(Check(WRONG, draws=2), timeout=120)
        assert isinstance(wrong.value, CheckResult) and wrong.value.draw == 0
        assert isinstance(wrong.value.mismatch, Mismatch)
        assert wrong.value.mismatch.argument == "y_ptr"
        timed = worker.request(Time(RIGHT), timeout=120)
        assert isinstance(timed.value, TimeResult) and timed.value.ms > 0
        assert timed.value.mismatch is None
        settings = StressCheck(min_launches=2, max_launches=2, seconds=0.0, draws=2)
        stressed = worker.request(Stress(WRONG, settings), timeout=120)
        report = stressed.value
        assert isinstance(report, StressReport) and not report.passed and report.wrong == 2
        assert isinstance(report.first_mismatch, Mismatch)
        assert report.first_mismatch.summary() in report.summary()
        compiled = worker.request(Compile(RIGHT), timeout=120)  # the interpreter compiles none
        assert compiled.status is Outcome.OK and compiled.value == CompileResult(None)
    finally:
        worker.close()


@pytest.mark.interpreter
def test_a_worker_gone_between_two_requests_is_restarted_not_a_closed_pipe(kernel_file,
                                                                         monkeypatch):
    """A worker killed after its answer (the OOM killer, a scheduler) closes its pipe; the next
    request must not raise BrokenPipeError, which the CLI reads as its own stdout closed (exit
    141, no results). The window between the liveness check and the send is held open here."""
    import os
    import signal

    worker = Worker(TaskRef(str(kernel_file), "TASK"), seed=0, baseline_json=None)
    try:
        assert worker.request(Check(RIGHT, draws=1), timeout=120).status is Outcome.OK
        first = worker.pid
        os.kill(first, signal.SIGKILL)
        worker._proc.join(10)
        monkeypatch.setattr(Worker, "alive", lambda self: self._proc is not None)
        again = worker.request(Check(RIGHT, draws=1), timeout=120)
        assert again.status is Outcome.OK and worker.pid != first
    finally:
        worker.close()


@pytest.mark.interpreter
def test_a_tuning_result_holds_configs_and_outcomes_and_writes_them_as_before(kernel_file,
                                                                            tmp_path):
    from tunegate.kernelfile import load_module

    task = load_module(kernel_file).TASK
    result = Tuner(task, TaskRef(str(kernel_file), "TASK"), policy=Policy([]),
                   store=Store(tmp_path / "s.sqlite")).run()
    assert isinstance(result.best, Config) and result.best == {"FACTOR": 2} == RIGHT
    wrong = next(t for t in result.trials if t.config == WRONG)
    assert wrong.status is Outcome.WRONG and wrong.reason.kind is Outcome.WRONG
    data = json.loads(result.model_dump_json())
    assert data["best"] == {"FACTOR": 2}
    assert {json.dumps(t["config"]): t["status"] for t in data["trials"]} == \
        {'{"FACTOR": 2}': "ok", '{"FACTOR": 1}': "wrong"}
    again = TuneResult.model_validate_json(result.model_dump_json())
    assert again.best == result.best and again.trials[0].config == result.trials[0].config
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        assert {r[0] for r in db.execute("SELECT status FROM trials")} == {"ok", "wrong"}


def test_reasons_stored_with_the_earlier_kind_words_read_as_outcomes(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    for status, kind in (("wrong", "accuracy"), ("crashed", "crash"),
                         ("compile_error", "compile")):
        store.record(_key(), Config(values={"FACTOR": kind}), status,
                     reason=Reason(kind=Outcome(status), summary=kind))
    with sqlite3.connect(tmp_path / "s.sqlite") as db:  # as an earlier tunegate wrote them
        for word, old in (("wrong", "accuracy"), ("crashed", "crash"),
                          ("compile_error", "compile")):
            db.execute("UPDATE trials SET reason=replace(reason, ?, ?) WHERE status=?",
                       (f'"kind":"{word}"', f'"kind":"{old}"', word))
        kinds = {json.loads(r[0])["kind"] for r in db.execute("SELECT reason FROM trials")}
    assert kinds == {"accuracy", "crash", "compile"}
    quarantined = store.quarantined("t", "n=64", "e")
    assert [r.kind for r in quarantined.values()] == [Outcome.WRONG]
    history = store.history("k", Config(values={"FACTOR": "crash"}))
    assert history[0]["status"] is Outcome.CRASHED
    assert history[0]["reason"]["kind"] == "crashed"


def test_outcomes_say_themselves_in_one_place():
    assert [o for o in Outcome if o.failed] == [Outcome.ERROR, Outcome.COMPILE_ERROR,
                                                Outcome.TIMEOUT, Outcome.CRASHED]
    assert Outcome.WRONG.headline == "REJECTED" and Outcome.OK.headline == ""
    assert Outcome.TIMEOUT.what("timing") == "timed out"
    assert Outcome.ERROR.what("timing") == "raised during timing"
    with pytest.raises(ValueError):
        Reason(kind="accurate", summary="not a kind")


def test_config_is_one_value_type_keyed_once():
    config = Config(values={"B": [1, 2], "A": 3})
    assert config == {"A": 3, "B": (1, 2)} and config != {"A": 3}
    assert hash(config) == hash(Config(values={"A": 3, "B": (1, 2)}))
    assert config.key() == '{"A":3,"B":[1,2]}' and dict(config) == {"B": (1, 2), "A": 3}
    assert Config(values=config) == config and Config.model_validate({"A": 3, "B": [1, 2]}) == \
        config
    assert Trial(config={"A": 1}, status="ok").config == Config(values={"A": 1})
    assert Trial(config={"A": 1}, status="ok").model_dump(mode="json")["config"] == {"A": 1}


def test_a_run_stopped_before_any_correct_config_says_what_stopped_it(tmp_path):
    """A search ended early by a worker that could not be restarted, with nothing measured,
    names that failure instead of calling the candidate list empty."""
    from tests.kernels.faulty import TASK
    from tunegate.autotune.ledger import Ledger
    from tunegate.autotune.results import Budget
    from tunegate.autotune.winner import no_winner
    from tunegate.policy.env import Environment
    from tunegate.policy.region import gate

    ledger = Ledger(Store(str(tmp_path / "s.sqlite")), lambda event: None)
    region = gate(TASK.space, [], Environment(), None)
    why = no_winner(ledger, TASK, region, Budget(), {},
                    stopped="a worker could not be restarted: it died while loading the task")
    assert why == ("tuning faulty_scale stopped before any config was found correct: a worker "
                   "could not be restarted: it died while loading the task")
    assert "excluded" in no_winner(ledger, TASK, region, Budget(), {})  # not stopped: as before


def test_a_run_where_no_config_is_right_names_the_first_failure(tmp_path):
    """'no correct config found' alone hides why (an error in every config: the one cause)."""
    from tests.kernels.faulty import TASK
    from tunegate.autotune.ledger import Ledger
    from tunegate.autotune.results import Budget
    from tunegate.autotune.winner import no_winner
    from tunegate.policy.env import Environment
    from tunegate.policy.region import gate

    ledger = Ledger(Store(str(tmp_path / "s.sqlite")), lambda event: None)
    ledger.open(_key(), "interpreter")
    config = TASK.space.default()
    ledger.record(Trial(config=config, status=Outcome.ERROR, reason=Reason(
        kind=Outcome.ERROR, summary="raised during the stress check: RuntimeError: boom")))
    why = no_winner(ledger, TASK, gate(TASK.space, [], Environment(), None), Budget(), {})
    assert why == (f"no correct config found for faulty_scale (1 error); first, "
                   f"{config.text()}: raised during the stress check: RuntimeError: boom")
