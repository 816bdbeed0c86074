"""`tunegate run` reaches the Python processes its program starts, too.

A program's own new interpreters (multiprocessing's "spawn" and "forkserver" processes, a script
it runs with `sys.executable`) would have Triton's own `Autotuner` again:
ungated, unchecked, and on a host without a GPU failing for want of a driver. While the program
runs, `reaching_children` puts the folder `child_site/` first on PYTHONPATH: its
`sitecustomize` has each such interpreter `install()` tunegate as Triton finishes loading
(a process that never loads Triton imports nothing more), then runs the `sitecustomize` it
hides, if there is one. A forked child keeps its parent's installation as it is.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["MARK", "install_when_triton_loads", "reaching_children"]

MARK = "TUNEGATE_RUN_CHILDREN"  # set for the program's children: install tunegate there
SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_site")


@contextmanager
def reaching_children() -> Iterator[None]:
    """Within it, a Python process this one starts installs tunegate as Triton loads."""
    saved = {name: os.environ.get(name) for name in (MARK, "PYTHONPATH")}
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ[MARK] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join([SITE, *(p for p in parts if p != SITE)])
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def install_when_triton_loads() -> None:
    """`install()` once the `triton` package has finished loading in this process (now, if it
    has), so that every kernel decorated after it is tunegate's."""
    if "triton" in sys.modules:
        _install()
    else:
        sys.meta_path.insert(0, _AfterTriton())


def _install() -> None:
    from .routing import install

    install()  # TRITON_INTERPRET, where the program set it, came with the environment


class _AfterTriton:
    """A meta path finder that finds nothing: when `triton` is about to load, it has the
    loader found for it call `_install` after running the package, then steps aside."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        if name != "triton":
            return None
        sys.meta_path.remove(self)
        from importlib.util import find_spec

        spec = find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader, run = spec.loader, spec.loader.exec_module

        def run_then_install(module: Any) -> None:
            del loader.exec_module  # the loader's own method again
            run(module)
            _install()

        loader.exec_module = run_then_install  # type: ignore[method-assign]
        return spec  # type: ignore[return-value]
