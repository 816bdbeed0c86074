"""The spare run worker imports the libraries built on torch or Triton that the program
imports, as the program imports them (`mirror`), and no others."""

import os
import sys
import time

from tunegate.autotune import mirror
from tunegate.autotune.pool import close_idle_workers, keep_spare
from tunegate.autotune.worker import Worker


def _distribution(site, name, requires):
    """A package `name` noting each importing process in $IMPORT_MARKER_FILE.name, installed
    in `site` with its metadata."""
    (site / name).mkdir(parents=True)
    (site / name / "kernels.py").write_text("VALUE = 1\n")
    (site / name / "__init__.py").write_text(
        "import os\n"
        f"with open(os.environ['IMPORT_MARKER_FILE'] + '.{name}', 'a') as f:\n"
        "    f.write(f'{os.getpid()}\\n')\n")
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "top_level.txt").write_text(f"{name}\n")
    (info / "RECORD").write_text(f"{name}/__init__.py,,\n")


def test_a_library_built_on_torch_is_imported_by_the_spare_run_worker_as_the_program_does(
        tmp_path, monkeypatch):
    site = tmp_path / "site"
    _distribution(site, "kernelslib", ["numpy", 'torch>=2.1; extra == "cuda"'])
    _distribution(site, "plainlib", ["numpy"])
    marker = tmp_path / "imported_by"
    monkeypatch.setenv("IMPORT_MARKER_FILE", str(marker))
    monkeypatch.syspath_prepend(str(site))
    close_idle_workers()
    spare = Worker.spare({})
    keep_spare("run0", spare)
    stop = mirror.start(poll_s=0.05)
    try:
        import kernelslib  # noqa: F401
        import plainlib  # noqa: F401

        by = marker.with_name(marker.name + ".kernelslib")
        deadline = time.monotonic() + 120
        while by.read_text().split() != [str(os.getpid()), str(spare.pid)]:
            assert time.monotonic() < deadline, by.read_text()
            time.sleep(0.1)
        assert marker.with_name(marker.name + ".plainlib").read_text().split() == [
            str(os.getpid())]
    finally:
        stop.set()
        close_idle_workers()
        for name in ("kernelslib", "plainlib"):
            sys.modules.pop(name, None)


def test_only_distributions_that_name_torch_or_triton_are_mirrored(tmp_path, monkeypatch):
    site = tmp_path / "site"
    _distribution(site, "tritonkernels", ["triton>=3"])
    _distribution(site, "otherlib", ["requests"])
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("IMPORT_MARKER_FILE", str(tmp_path / "m"))
    imports = mirror.MirroredImports()
    assert "json" not in imports.new()  # stdlib, and whatever was imported before
    import otherlib.kernels  # noqa: F401
    import tritonkernels.kernels  # noqa: F401

    try:
        assert imports.new() == ["tritonkernels", "tritonkernels.kernels"]
        assert imports.new() == []
    finally:
        for name in ("otherlib", "tritonkernels", "otherlib.kernels", "tritonkernels.kernels"):
            sys.modules.pop(name, None)


def test_preloads_never_wait_for_a_worker_busy_importing(tmp_path, monkeypatch):
    """A spare importing a slow library reads nothing meanwhile: what its pipe has no room
    for is not sent (a send would block the program, as the mirror and the autotuners it
    defines send from its threads), and is sent once the worker is kept again."""
    from tunegate.autotune.pool import preload

    site = tmp_path / "site"
    (site / "sleepylib").mkdir(parents=True)
    (site / "sleepylib" / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.syspath_prepend(str(site))
    close_idle_workers()
    spare = Worker.spare({})
    keep_spare("run0", spare)
    try:
        preload("sleepylib")
        names = [f"not_a_module_{i:05d}_{'x' * 60}" for i in range(6000)]
        start = time.monotonic()
        for i in range(0, len(names), 100):
            preload(*names[i:i + 100])
        assert time.monotonic() - start < 10
        assert 0 < len(spare.preloaded & set(names)) < len(names)
    finally:
        close_idle_workers()


def test_a_tuning_takes_a_compile_worker_that_imported_its_module_first(tmp_path, monkeypatch):
    """The first kept compile workers import the program's kernel modules ahead of their first
    tuning (see `pool.preload`); a pool takes a compile worker that has imported the task's
    module before one that has not, wherever it stands among those kept."""
    from tests.conftest import KERNELS
    from tunegate.autotune import pool as pools
    from tunegate.autotune.pool import COMPILE_ENV, WorkerPool, preload
    from tunegate.autotune.worker import TaskRef

    monkeypatch.setattr(pools, "PRELOADING_COMPILERS", 1)
    monkeypatch.setattr(pools, "_PRELOADS", {})  # none named by the tests before
    monkeypatch.setenv("IMPORT_MARKER_FILE", str(tmp_path / "imported_by"))
    close_idle_workers()
    first, second = Worker.spare(dict(COMPILE_ENV)), Worker.spare(dict(COMPILE_ENV))
    keep_spare("compile", first)
    keep_spare("compile", second)
    module = "tests.kernels.marked_copy"
    import tests.kernels.marked_copy  # noqa: F401 - as the program has, when it preloads
    pools_made = []

    def compile_pool(ref: TaskRef) -> WorkerPool:
        pool = WorkerPool(ref, seed=0, baseline_json=None, compilers=1, deterministic=True,
                          precompile=True)
        pools_made.append(pool)
        pool.launch()
        assert all(loaded.wait(120) for loaded in pool._loaded.values())
        return pool

    try:
        preload(module)
        assert module in first.preloaded and not second.preloaded
        other = compile_pool(TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_WITH_REFERENCE"))
        assert other.compilers == [first]
        other.close()  # kept again, now behind `second`
        marked = compile_pool(TaskRef(str(KERNELS / "marked_copy.py"), "TASK_WITH_REFERENCE",
                                      module=module))
        assert marked.compilers == [first]
    finally:
        for pool in pools_made:
            pool.close()
        close_idle_workers()
        sys.modules.pop(module, None)


def test_the_distributions_are_read_again_only_for_a_path_entry_that_holds_some(
        tmp_path, monkeypatch):
    """Reading them scans every installed distribution; pytest adds each test folder to
    sys.path, and a folder of tests holds none."""
    reads = []
    real = mirror._scan
    monkeypatch.setattr(mirror, "_scan", lambda path: reads.append(path) or real(path))
    monkeypatch.setenv("IMPORT_MARKER_FILE", str(tmp_path / "m"))
    imports = mirror.MirroredImports()
    imports.new()
    assert len(reads) == 1
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "helpers_of_tests.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tests))
    import helpers_of_tests  # noqa: F401

    site = tmp_path / "site"
    _distribution(site, "latekernels", ["torch"])
    try:
        assert imports.new() == [] and len(reads) == 1  # a folder of no distribution
        monkeypatch.syspath_prepend(str(site))
        import latekernels  # noqa: F401

        assert imports.new() == ["latekernels"] and reads[1] == [str(site)]  # that one alone
    finally:
        for name in ("helpers_of_tests", "latekernels"):
            sys.modules.pop(name, None)


def test_the_distributions_are_read_in_a_process_of_their_own(tmp_path, monkeypatch):
    """Parsing a few hundred distributions' metadata would hold the program's GIL: the scan
    runs in a child process, which finds what the scan here finds."""
    site = tmp_path / "site"
    _distribution(site, "childkernels", ['triton; extra == "gpu"'])
    _distribution(site, "childplain", ["numpy"])
    info = site / "childkernels-1.0.dist-info"
    (info / "top_level.txt").unlink()  # found from RECORD: its files' first parts
    called = []
    real = mirror.subprocess.run
    monkeypatch.setattr(mirror.subprocess, "run", lambda *a, **k: called.append(a) or real(*a, **k))
    assert mirror._scan([str(site)]) == mirror.torch_packages([str(site)]) == {"childkernels"}
    assert called and called[0][0][:3] == [sys.executable, "-m", "tunegate.autotune.mirror"]
