"""Compile workers that see no GPU fill Triton's cache for the GPU target they are told.

Runs here without a GPU: the workers compile real cubins for sm_90 (the run worker interprets).
"""

from __future__ import annotations

import time

import pytest

from tests.conftest import KERNELS
from tunegate.autotune import trace
from tunegate.autotune.pool import COMPILE_ENV, WorkerPool, close_idle_workers, idle_workers
from tunegate.autotune.precompile import TaskCompiler
from tunegate.autotune.worker import TaskRef
from tunegate.kernelfile import load_module
from tunegate.space.space import Config

pytestmark = pytest.mark.interpreter


def _loaded_pool(ref: TaskRef, compilers: int) -> WorkerPool:
    """A started pool whose compile workers have all loaded the task (so that no config is
    left to the run worker)."""
    pool = WorkerPool(ref, seed=0, baseline_json=None, compilers=compilers, deterministic=True,
                      precompile=True)
    pool.start()
    assert all(loaded.wait(120) for loaded in pool._loaded.values())
    return pool


@pytest.fixture
def compiling_pool(tmp_path, monkeypatch):
    """A started pool with two compile workers, compiling into this test's own cache."""
    close_idle_workers()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    pool = _loaded_pool(TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_WITH_REFERENCE"), 2)
    try:
        yield pool
    finally:
        pool.close()
        close_idle_workers()


def test_compile_workers_compile_for_the_target_and_report_errors(tmp_path, compiling_pool):
    pool = compiling_pool
    configs = [Config(values={"BLOCK": b, "STAGES": s}) for b in (32, 64) for s in (1, 2)]
    bad = Config(values={"BLOCK": 48, "STAGES": 1})  # arange of a non-power of two
    replies = dict(pool.compile_stream([*configs, bad], timeout=120, target="cuda:90:32"))
    assert len(pool.compilers) == 2 and {w.kind for w in pool.compilers} == {"compile"}
    assert all(replies[c].status == "ok" and isinstance(replies[c].value.shared_bytes, int)
               for c in configs), {c.text(): r.error for c, r in replies.items()}
    assert replies[bad].status == "compile_error"
    assert len(list((tmp_path / "cache").iterdir())) >= len(configs)


def test_compile_workers_make_inputs_without_contents_where_they_can():
    """Asked without the run worker's specs: on torch's meta device (no memory, nothing
    filled) unless make_inputs needs real data."""
    import torch

    task = load_module(KERNELS / "pipelined_copy.py").TASK

    def reads_a_value(seed, device):
        args = task.make_inputs(seed, device)
        assert float(args["x_ptr"].abs().sum()) > 0  # meta tensors have no values to read
        return args

    on_meta = TaskCompiler(task, seed=0, inputs=None)
    on_cpu = TaskCompiler(task.model_copy(update={"make_inputs": reads_a_value}), seed=0,
                          inputs=None)
    devices = [{v.device.type for v in c.own_args.values() if isinstance(v, torch.Tensor)}
               for c in (on_meta, on_cpu)]
    assert devices == [{"meta"}, {"cpu"}]


def test_compile_workers_specialise_on_the_run_workers_arguments(tmp_path, monkeypatch):
    """The run worker sends draw 0's dtypes and values (`Runner.arg_specs`); the compile
    workers make no inputs of their own (fifteen of them each drawing a large input held up
    a tuning's start) and fill the cache entries a launch on those arguments looks up."""
    from tunegate.autotune.precompile import TensorSpec

    close_idle_workers()
    marker = tmp_path / "inputs"
    monkeypatch.setenv("INPUTS_MARKER_FILE", str(marker))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    ref = TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_NOTING_INPUTS")
    pool = WorkerPool(ref, seed=0, baseline_json=None, compilers=2, deterministic=True,
                      precompile=True)
    try:
        pool.start()
        for loaded in pool._loaded.values():
            assert loaded.wait(120)
        assert pool.run.arg_specs == {"x_ptr": TensorSpec("float32"),
                                      "y_ptr": TensorSpec("float32"), "n": 512}
        configs = [Config(values={"BLOCK": b, "STAGES": 1}) for b in (32, 64)]
        replies = dict(pool.compile_stream(configs, timeout=120, target="cuda:90:32"))
        assert {c: r.status for c, r in replies.items()} == {c: "ok" for c in configs}
    finally:
        pool.close()
        close_idle_workers()
    assert set(marker.read_text().split()) == {"run"}


def test_a_tuning_never_waits_for_compile_workers_still_loading_the_task(tmp_path, monkeypatch):
    """While no compile worker has imported the kernel's module (a large library, seconds in
    each), every config is left to the run worker to compile at its first launch; once
    loaded, the compile workers are kept for the next tuning all the same."""
    close_idle_workers()
    monkeypatch.setenv("SLOW_IMPORT_S", "5")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    pool = WorkerPool(TaskRef(str(KERNELS / "slow_import.py"), "TASK"), seed=0,
                      baseline_json=None, compilers=2, deterministic=True, precompile=True)
    configs = [Config(values={"BLOCK": b, "STAGES": s}) for b in (32, 64) for s in (1, 2)]
    try:
        pool.start()
        replies = list(pool.compile_stream(configs, timeout=120, target="cuda:90:32"))
    finally:
        pool.close()
    assert sorted(c.key() for c, _ in replies) == sorted(c.key() for c in configs)
    assert all(reply is None for _, reply in replies)  # none waited for a compile worker
    deadline = time.monotonic() + 120
    while sum(w.env == COMPILE_ENV for w in idle_workers()) < 2:
        assert time.monotonic() < deadline, "the loading compile workers were not kept"
        time.sleep(0.2)
    close_idle_workers()


def test_the_compile_stream_ends_with_its_configs_not_with_the_workers_still_loading(
        tmp_path, monkeypatch):
    """One compile worker has the module imported (kept from an earlier tuning, or sent it
    ahead), another is still importing it: the configs are compiled by the first, and the
    stream ends then. A library's first tuning on an H100 host waited 10.5 s here for the
    compile workers still importing Liger-Kernel."""
    close_idle_workers()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    ref = TaskRef(str(KERNELS / "slow_import.py"), "TASK")
    _loaded_pool(ref, 1).close()  # its compile worker is kept, the module imported
    monkeypatch.setenv("SLOW_IMPORT_S", "60")  # a new compile worker imports it for a minute
    pool = WorkerPool(ref, seed=0, baseline_json=None, compilers=2, deterministic=True,
                      precompile=True)
    configs = [Config(values={"BLOCK": b, "STAGES": s}) for b in (32, 64) for s in (1, 2)]
    try:
        pool.start()
        deadline = time.monotonic() + 60
        while not any(event.is_set() for event in pool._loaded.values()):
            assert time.monotonic() < deadline, "the kept compile worker never loaded the task"
            time.sleep(0.05)
        assert len(pool.compilers) == 2 and not all(e.is_set() for e in pool._loaded.values())
        start = time.monotonic()
        replies = list(pool.compile_stream(configs, timeout=120, target="cuda:90:32"))
        took = time.monotonic() - start
    finally:
        pool.close()
        close_idle_workers()
    assert sorted(c.key() for c, _ in replies) == sorted(c.key() for c in configs)
    assert all(reply is not None and reply.status == "ok" for _, reply in replies)
    assert took < 30, f"the stream waited {took:.0f} s for the worker still importing"


def test_no_compile_worker_is_started_while_those_of_an_earlier_tuning_still_import(
        tmp_path, monkeypatch):
    """Tunings one after another while the compile workers of the first still import the
    kernel's library: the later ones start none beside them (each would import the same
    library too) and compile in the run worker; once loaded, those workers serve again."""
    close_idle_workers()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SLOW_IMPORT_S", "8")
    ref = TaskRef(str(KERNELS / "slow_import.py"), "TASK")
    configs = [Config(values={"BLOCK": b, "STAGES": 1}) for b in (32, 64)]

    def pool() -> WorkerPool:
        return WorkerPool(ref, seed=0, baseline_json=None, compilers=2, deterministic=True,
                          precompile=True)

    first = pool()
    try:
        first.start()
        importing = {w.pid for w in first.compilers}
    finally:
        first.close()  # its two compile workers go on importing the module
    second = pool()
    try:
        second.start()
        started_beside = len(second.compilers)
        replies = list(second.compile_stream(configs, timeout=120, target="cuda:90:32"))
    finally:
        second.close()
    assert started_beside == 0 and len(importing) == 2
    assert replies == []  # no stream: the run worker compiles each at its first launch
    deadline = time.monotonic() + 120
    while sum(w.env == COMPILE_ENV for w in idle_workers()) < 2:
        assert time.monotonic() < deadline, "the importing compile workers were not kept"
        time.sleep(0.2)
    third = pool()
    try:
        third.start()
        assert {w.pid for w in third.compilers} == importing  # the same two, loaded
    finally:
        third.close()
        close_idle_workers()


def test_configs_compiled_ahead_compile_while_the_run_worker_starts(tmp_path, monkeypatch):
    """`compile_ahead` before the run worker is ready (in the drop-in it first compiles and
    launches the baseline config: seconds on a large kernel): every config is compiled by the
    time it is, and the search's stream reads those answers instead of asking again."""
    close_idle_workers()
    events = tmp_path / "trace.jsonl"
    monkeypatch.setenv(trace.ENV, str(events))
    monkeypatch.setenv("SLOW_INPUTS_S", "6")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    configs = [Config(values={"BLOCK": b, "STAGES": s}) for b in (32, 64) for s in (1, 2)]
    pool = WorkerPool(TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_SLOW_RUN_WORKER"),
                      seed=0, baseline_json=configs[0].key(), compilers=2, deterministic=True,
                      precompile=True)
    try:
        pool.launch()
        pool.compile_ahead(configs, timeout=120, target="cuda:90:32")
        pool.start()
        ready = time.time()
        replies = dict(pool.compile_stream(configs[1:], timeout=120, target="cuda:90:32"))
    finally:
        pool.close()
        close_idle_workers()
    assert {c: r.status for c, r in replies.items()} == {c: "ok" for c in configs[1:]}
    compiled = [e["t"] for e in trace.read(str(events)) if e["event"] == "Compile"]
    assert len(compiled) == len(configs)  # each asked once
    assert max(compiled) < ready


def test_a_batch_beyond_what_was_compiled_ahead_gets_a_stream_of_its_own(compiling_pool):
    pool = compiling_pool
    configs = [Config(values={"BLOCK": b, "STAGES": s}) for b in (32, 64) for s in (1, 2)]
    pool.compile_ahead(configs[:2], timeout=120, target="cuda:90:32")
    replies = dict(pool.compile_stream(configs, timeout=120, target="cuda:90:32"))
    assert {c: r.status for c, r in replies.items()} == {c: "ok" for c in configs}
    assert all(w.idle() for w in pool.compilers)  # the first stream's answers were all read
    pool.compile_ahead(configs, timeout=120, target="cuda:80:32")  # another GPU's target
    replies = dict(pool.compile_stream(configs[:1], timeout=120, target="cuda:90:32"))
    assert {c: r.status for c, r in replies.items()} == {configs[0]: "ok"}
    assert all(w.idle() for w in pool.compilers)


def test_a_pool_closed_with_its_compiles_ahead_unread_keeps_idle_workers(compiling_pool):
    """A tuning that ends before its search reads what was compiled ahead (a stored best
    reused, an error): the compiles in flight end before the workers are kept."""
    pool = compiling_pool
    configs = [Config(values={"BLOCK": b, "STAGES": s}) for b in (32, 64) for s in (1, 2)]
    pool.compile_ahead(configs, timeout=120, target="cuda:90:32")
    workers = list(pool.compilers)
    pool.close()
    assert all(w.alive() and w.idle() for w in workers)
    assert all(w in idle_workers() for w in workers)


def test_a_short_list_takes_only_compile_workers_that_have_imported_its_file(
        tmp_path, monkeypatch):
    """A drop-in list of two or three configs (`loaded_only`): no compile worker is started
    for it (each would import the program's module first); kept ones that have imported it
    compile its configs."""
    close_idle_workers()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    ref = TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_WITH_REFERENCE")

    def short_list_pool() -> WorkerPool:
        return WorkerPool(ref, seed=0, baseline_json=None, compilers=2, deterministic=True,
                          precompile=True, loaded_only=True)

    pool = short_list_pool()
    try:
        pool.start()
        assert pool.compilers == []
    finally:
        pool.close()
    _loaded_pool(ref, 2).close()  # two compile workers kept, the file imported
    pool = short_list_pool()
    configs = [Config(values={"BLOCK": 32, "STAGES": s}) for s in (1, 2)]
    try:
        pool.start()
        assert len(pool.compilers) == 2 and all(ref.file in w.loaded for w in pool.compilers)
        assert all(loaded.wait(120) for loaded in pool._loaded.values())  # re-tasked: loaded
        replies = dict(pool.compile_stream(configs, timeout=120, target="cuda:90:32"))
    finally:
        pool.close()
        close_idle_workers()
    assert {c: r.status for c, r in replies.items()} == {c: "ok" for c in configs}


def test_a_task_that_launches_itself_is_refused_with_a_reason():
    task = load_module(KERNELS / "pipelined_copy.py").TASK
    own = task.model_copy(update={"launch": lambda args, config: None})
    with pytest.raises(Exception, match="launches through its own function"):
        TaskCompiler(own, seed=0, inputs=None)


def test_a_compile_stream_closed_early_leaves_no_answer_unread(compiling_pool):
    """Closing the stream after its first config (the search ran out of time) waits for the
    compiles in flight: the workers' next request gets its own answer."""
    pool = compiling_pool
    configs = [Config(values={"BLOCK": b, "STAGES": s}) for b in (32, 64) for s in (1, 2)]
    stream = pool.compile_stream(configs, timeout=120, target="cuda:90:32")
    first, reply = next(stream)
    stream.close()
    assert first in configs and reply.status == "ok"
    assert all(w.idle() for w in pool.compilers)
    bad = [Config(values={"BLOCK": 48, "STAGES": s}) for s in (1, 2)]
    replies = dict(pool.compile_stream(bad, timeout=120, target="cuda:90:32"))
    assert {c: r.status for c, r in replies.items()} == {c: "compile_error" for c in bad}


def test_the_spare_run_worker_and_the_first_compile_spares_import_an_autotuners_module_ahead(
        tmp_path, monkeypatch):
    """`preload` (the module of an autotuner the program defined) goes to the spare run worker
    and the first PRELOADING_COMPILERS compile spares, not to the others: fifteen processes
    importing a large library at once beside the program slowed everything; the others import
    it when a tuning needs them."""
    from tunegate.autotune import pool as pools
    from tunegate.autotune.pool import keep_spare, preload
    from tunegate.autotune.worker import Worker

    monkeypatch.setattr(pools, "PRELOADING_COMPILERS", 1)
    monkeypatch.setattr(pools, "_PRELOADS", {})
    close_idle_workers()
    marker = tmp_path / "imported_by"
    monkeypatch.setenv("IMPORT_MARKER_FILE", str(marker))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    spares = [("run0", Worker.spare({})), ("compile", Worker.spare(dict(COMPILE_ENV))),
              ("compile", Worker.spare(dict(COMPILE_ENV)))]
    importers = sorted(str(spare.pid) for _, spare in spares[:2])
    for role, spare in spares:
        keep_spare(role, spare)
    preload("tests.kernels.import_marker")
    pool = WorkerPool(TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_WITH_REFERENCE"),
                      seed=0, baseline_json=None, compilers=2, deterministic=True,
                      precompile=True)
    try:
        pool.start()  # takes every spare: each has handled the messages sent before its task
        for loaded in pool._loaded.values():
            assert loaded.wait(120)
        assert pool.compilers == [spares[1][1], spares[2][1]] and pool.run is spares[0][1]
    finally:
        pool.close()
        close_idle_workers()
    assert sorted(marker.read_text().split()) == importers


def test_a_misaligned_argument_leaves_compile_workers_to_make_their_own_inputs():
    """A tensor view that is not 16-byte aligned specialises its launch otherwise: the run
    worker sends no specs for it (compile workers make their inputs), and does for the task
    as written."""
    import torch

    from tunegate.autotune.precompile import TensorSpec
    from tunegate.autotune.runner import Runner

    task = load_module(KERNELS / "pipelined_copy.py").TASK_WITH_REFERENCE

    def shifted(seed, device):
        args = task.make_inputs(seed, device)
        wide = torch.randn(513, generator=torch.Generator().manual_seed(seed)).to(device)
        return {**args, "x_ptr": wide[1:]}  # 4 bytes past an aligned start

    assert Runner(task, seed=0, baseline=None).arg_specs() == {
        "x_ptr": TensorSpec("float32"), "y_ptr": TensorSpec("float32"), "n": 512}
    misaligned = task.model_copy(update={"make_inputs": shifted})
    assert Runner(misaligned, seed=0, baseline=None).arg_specs() is None


def test_only_compile_workers_given_a_calls_dtypes_can_compile_ahead_of_the_run_worker():
    """A drop-in call's compile workers specialise on its dtypes, so they may compile before
    the run worker has drawn; a task's own would have to make its inputs first."""
    from tests.kernels.pipelined_copy import SlowRunWorkerCall

    path = str(KERNELS / "pipelined_copy.py")

    def pool(ref):
        return WorkerPool(ref, seed=0, baseline_json=None, compilers=2, deterministic=True,
                          precompile=True)

    assert pool(TaskRef(path, "TASK_SLOW_RUN_WORKER",
                        inputs=SlowRunWorkerCall())).compilers_have_the_call
    assert not pool(TaskRef(path, "TASK_SLOW_RUN_WORKER")).compilers_have_the_call
