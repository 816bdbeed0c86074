"""Fuzz: whatever a kernel file holds, `tunegate tune` and `policy explain --kernel` answer in
one clean line (issue 18).

Random text and bytes, modules that raise any exception (BaseException subclasses included) or
exit at import, and `TASK` objects of every wrong type: the command exits 1 or 2 (130 for a
KeyboardInterrupt raised by the file), says exactly one `tunegate: error:` line naming the file,
and never shows a traceback.
"""

from __future__ import annotations

import tempfile
from itertools import count
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import FUZZ
from tunegate.cli import main

FILE_FUZZ = settings(FUZZ, max_examples=40, deadline=None,
                     suppress_health_check=[*FUZZ.suppress_health_check,
                                            HealthCheck.function_scoped_fixture])
"""Few examples: each one imports a new module."""

_FOLDER = Path(tempfile.mkdtemp(prefix="tunegate-kernelfiles-"))
_NUMBERS = count()

_RAISED = st.sampled_from([
    "raise KeyError('k')", "raise ValueError", "raise RecursionError", "raise MemoryError",
    "raise ImportError('no such thing')", "import no_such_module_anywhere",
    "class Odd(BaseException):\n    pass\nraise Odd('odd')", "raise GeneratorExit",
    "import sys\nsys.exit(0)", "import sys\nsys.exit('a message')", "import sys\nsys.exit(7)",
    "raise SystemExit(None)", "def f():\n    return f()\nf()", "1 / 0", "x = undefined_name",
])
_WRONG_TASKS = st.sampled_from([
    "TASK = 3", "TASK = None", "TASK = 'a task'", "TASK = {'kernel': 1}", "TASK = [1, 2]",
    "TASK = lambda: 0", "TASK = object()", "TASK = type('T', (), {})",
    "import math\nTASK = math", "TASK = print", "class TASK:\n    fn = None",
])
_TEXT = st.one_of(st.text(max_size=60), st.binary(max_size=60).map(
    lambda b: b.decode("latin-1")))
_SOURCES = st.one_of(_RAISED, _WRONG_TASKS, _TEXT)
_NAMES = st.one_of(st.just("TASK"), st.just(""), st.sampled_from(["nope", "a.b", "TASK.fn",
                                                                   "é", "0"]))


def _write(source: str) -> Path:
    """`source` as a new kernel file (a fresh name: modules are not re-imported by name)."""
    path = _FOLDER / f"k{next(_NUMBERS)}.py"
    path.write_bytes(source.encode("utf-8", "surrogatepass"))
    return path


def _answers_in_one_line(code: int, err: str, path: Path) -> None:
    assert "Traceback" not in err, err
    if code == 130:  # the file raised KeyboardInterrupt: an interrupt, said as one
        assert err.strip().endswith("tunegate: interrupted"), err
        return
    assert code in (1, 2), (code, err)
    errors = [line for line in err.splitlines() if line.startswith("tunegate: error:")]
    assert len(errors) == 1, err
    assert path.name in errors[0], errors[0]


@FILE_FUZZ
@given(source=_SOURCES, name=_NAMES)
def test_tune_of_any_broken_kernel_file_is_one_error_line(capsys, source, name):
    path = _write(source)
    capsys.readouterr()
    code = main(["tune", f"{path}:{name}" if name else str(path), "--json"])
    _answers_in_one_line(code, capsys.readouterr().err, path)


@FILE_FUZZ
@given(source=_SOURCES)
def test_explain_with_any_broken_kernel_file_is_one_error_line(capsys, source):
    path = _write(source)
    capsys.readouterr()
    code = main(["policy", "explain", "BLOCK=16", "--kernel", f"{path}:TASK"])
    _answers_in_one_line(code, capsys.readouterr().err, path)
