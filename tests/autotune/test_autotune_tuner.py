"""The tuner on real Triton kernels (the CPU interpreter here; the GPU where there is one)."""

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import KERNELS, ROOT, run_cli
from tunegate.autotune import Budget, Store, TuneError, Tuner, tune
from tunegate.autotune.worker import TaskRef
from tunegate.policy import Policy, builtin_policy_path

pytestmark = pytest.mark.interpreter


def builtin():
    return Policy.from_files(builtin_policy_path())


def test_split_k_wrong_configs_are_rejected_and_never_returned(tmp_path):
    from examples import splitk

    store = Store(tmp_path / "s.sqlite")
    result = tune(splitk.TASK, policy=builtin(), store=store)
    assert result.best["SPLIT_K"] == 1
    wrong = [t for t in result.trials if t.status == "wrong"]
    assert len(wrong) == 16 and all(t.config["SPLIT_K"] > 1 for t in wrong)
    evidence = wrong[0].reason.evidence
    assert evidence["argument"] == "c_ptr" and evidence["mismatched"] > 0
    assert evidence["first_index"] == [0, 0] and result.timing == "interpreter"
    assert len(store.quarantined(splitk.TASK.fingerprint(), result.problem, result.env)) == 16
    # a second run reuses the stored winner without measuring anything
    again = tune(splitk.TASK, policy=builtin(), store=store)
    assert again.reused and again.best == result.best and again.trials == []


def test_policy_edit_takes_effect_on_the_next_call(tmp_path, write_policy):
    from tests.kernels import pipelined_copy

    prefer = write_policy('''
        schema = 1
        [[rule]]
        id = "no-single-stage"
        title = "t"
        action = "disable"
        match = "STAGES == 1"
        reason = "force the winner to pipeline, for this test"
        ''', "a.toml")
    forbid = write_policy('''
        schema = 1
        [[rule]]
        id = "no-pipelining"
        title = "t"
        action = "disable"
        features = ["range_num_stages"]
        reason = "r"
        ''', "b.toml")
    store = Store(tmp_path / "s.sqlite")
    task = pipelined_copy.TASK_WITH_REFERENCE
    first = tune(task, policy=Policy.from_files(prefer), store=store)
    assert first.best["STAGES"] > 1
    second = tune(task, policy=Policy.from_files(forbid), store=store)
    assert not second.reused and second.best["STAGES"] == 1
    assert any("now excluded by no-pipelining" in n for n in second.notes)
    assert second.removals == {"no-pipelining": 4}


def test_hang_and_build_failure_cost_one_config_each(tmp_path):
    from tests.kernels import faulty

    tuner = Tuner(faulty.TASK, TaskRef(str(KERNELS / "faulty.py"), "TASK"), policy=builtin(),
                  store=Store(tmp_path / "s.sqlite"), timeout=6)
    result = tuner.run()
    by_mode = {}
    for t in result.trials:
        by_mode.setdefault(t.config["MODE"], set()).add(t.status)
    assert by_mode == {0: {"ok"}, 1: {"timeout"}, 2: {"compile_error"}}
    assert result.best["MODE"] == 0
    timeout = next(t for t in result.trials if t.status == "timeout")
    assert timeout.reason.kind == "timeout" and "killed" in timeout.reason.summary


def _copy_tuner(tmp_path, policy) -> Tuner:
    """The chunked copy's tuner (no reference) under `policy`."""
    from tests.kernels import pipelined_copy

    return Tuner(pipelined_copy.TASK, TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK"),
                 policy=policy, store=Store(tmp_path / "s.sqlite"), budget=Budget(configs=2))


def test_an_excluded_baseline_gives_way_to_the_closest_allowed_config(tmp_path, rules_policy):
    tuner = _copy_tuner(tmp_path, rules_policy(("no-single-stage", "disable", "STAGES == 1")))
    assert tuner.baseline["STAGES"] == 2  # the fewest stages left, the default block
    result = tuner.run()
    assert result.best["STAGES"] > 1
    assert any("usual baseline config" in n and "no-single-stage" in n for n in result.notes)


def test_a_policy_that_excludes_every_config_is_a_clear_error(tmp_path, rules_policy):
    tuner = _copy_tuner(tmp_path, rules_policy(("no-copy", "disable", "BLOCK >= 1")))
    with pytest.raises(TuneError, match="every candidate config of chunked_copy is excluded"):
        tuner.run()


def test_decorator_tunes_on_first_call_and_rejects_wrong_configs(tmp_path):
    code = textwrap.dedent(f"""
        import os, torch
        os.environ["TRITON_INTERPRET"] = "1"
        os.environ["TUNEGATE_STORE"] = {str(tmp_path / "s.sqlite")!r}
        from tests.kernels import decorated
        x = torch.randn(300)
        y = torch.empty(1)
        decorated.total(x, y, 300)
        r = decorated.total.last_result
        assert abs(y.item() - x.sum().item()) < 1e-3, (y, x.sum())
        assert r.best["SPLIT"] == 1, r.best
        assert {{t.status for t in r.trials if t.config["SPLIT"] == 2}} == {{"wrong"}}
        decorated.total(x, y, 300)  # same key: no new tuning
        assert decorated.total.last_result is r
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    assert out.stdout.strip().endswith("ok"), out.stderr


def test_two_tuners_on_one_database(tmp_path):
    store = tmp_path / "shared.sqlite"
    procs = [subprocess.Popen([sys.executable, "-m", "tunegate", "tune",
                               "tests/kernels/pipelined_copy.py:TASK", "--store", str(store),
                               "--seed", str(seed), "--json"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for seed in (1, 2)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    assert Store(store).integrity() == "ok"


def test_tune_cli_summary_and_explain_history(tmp_path):
    store = str(tmp_path / "s.sqlite")
    result = run_cli("tune", "examples/splitk.py:TASK", "--store", store)
    assert result.returncode == 0, result.stderr
    assert "rejected by accuracy check            16" in result.stdout
    assert "interpreter timing" in result.stdout and "SPLIT_K=1" in result.stdout
    explain = run_cli("policy", "explain", "BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, SPLIT_K=2, "
                      "num_warps=4", "--kernel", "examples/splitk.py:TASK", "--store", store)
    assert explain.returncode == 0, explain.stderr
    # the policy only makes it experimental; the check rejected it, and that is the headline
    assert "verdict  REJECTED by tuning (policy: experimental)" in explain.stdout
    assert "split-k-atomics" in explain.stdout and "rtol 0.0001" in explain.stdout
    assert "Recorded history" in explain.stdout and "wrong output" in explain.stdout
    assert "first_index: [0, 0]" in explain.stdout
    # the evidence counts draws as its summary does, and leaves out what was not measured
    assert "on input draw 1" in explain.stdout and "      draw: 1" in explain.stdout
    assert ": None" not in explain.stdout
    # which unsplit config is fastest is up to interpreter timing noise: explain the winner
    winner = next(line for line in result.stdout.splitlines() if line.startswith("best config"))
    winner = winner.removeprefix("best config").strip()
    best = run_cli("policy", "explain", winner, "--kernel", "examples/splitk.py:TASK",
                   "--store", store)
    assert "rank 1 of 8" in best.stdout, best.stdout


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM", "SIGTERM to the group"])
def test_an_interrupt_keeps_what_was_measured(tmp_path, stop):
    import os
    import signal
    import time

    store = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "tunegate", "tune",
                             "tests/kernels/faulty.py:TASK", "--store", str(store),
                             "--timeout", "120", "--strategy", "exhaustive"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until the first config (MODE=0) is measured
        time.sleep(1)
        if store.exists() and len(_trials(store)) >= 1:
            break
    time.sleep(2)  # now the worker is stuck in the MODE=1 hang
    if stop == "SIGINT":  # Ctrl-C reaches the whole process group
        os.killpg(proc.pid, signal.SIGINT)
    elif stop == "SIGTERM":  # a scheduler stops the tuner itself
        os.kill(proc.pid, signal.SIGTERM)
    else:  # `timeout`, or a job's end: the tuner, its worker server and workers
        os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert "interrupted" in out and "MODE=0" in out.split("best config")[1].splitlines()[0]
    assert "of up to 6 configs were measured" in out  # the space's 6, not the budget's 64


def _trials(path):
    import sqlite3

    with sqlite3.connect(path) as db:
        try:
            return db.execute("SELECT status FROM trials").fetchall()
        except sqlite3.OperationalError:  # the store file exists, its tables not yet
            return []


def test_a_baseline_that_cannot_run_here_gives_way_to_the_next(tmp_path):
    from tests.kernels import judge_kernels as jk

    tuner = Tuner(jk.ODD_BASELINE, TaskRef(str(KERNELS / "judge_kernels.py"), "ODD_BASELINE"),
                  policy=builtin(), store=Store(tmp_path / "s.sqlite"))
    assert tuner.baseline["BLOCK"] == 48  # the space default: no rule excludes it
    result = tuner.run()
    assert result.best["BLOCK"] in (32, 64)
    assert any("could not run here: the baseline config BLOCK=48 raised" in n
               for n in result.notes), result.notes
    assert "BLOCK=32" in result.compared_with
    by_block = {t.config["BLOCK"]: t.status for t in result.trials}
    assert by_block[48] == "compile_error" and by_block[64] == "ok"
