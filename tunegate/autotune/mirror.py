"""The program's imports of libraries built on torch or Triton, mirrored in the spare run worker
(and the first few compile workers kept, see `pool.preload`) while the program makes them.

An autotuner's module is sent to the spare run worker when the program defines the autotuner
(`warm.preload`), which under pytest is collection, a second before the first tuning; the
worker's import of it then imports the whole library anew (Liger-Kernel with transformers took
14.4 s on an H200 host, all of it in the first tuning). From warm-up on, each package the
program imports whose distribution names torch or Triton among its requirements is sent to the
worker as the program imports it (each of its modules), so the two imports overlap instead of
following each other. Which packages those are is read from the installed distributions in a
process of its own (`_scan`), not in this one's thread: parsing a GPU image's few hundred
distributions held the program's GIL for a second of its start-up.
Packages of the standard library, of no distribution, or built on neither are left alone.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import logging
import os
import subprocess
import sys
import threading
from typing import Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .._threads import start as start_thread
from . import trace

__all__ = ["MirroredImports", "built_on_torch", "start", "torch_packages"]

log = logging.getLogger(__name__)

POLL_S = 0.25  # how often the program's modules are looked at (a scan costs well under 1 ms)
SCAN_TIMEOUT_S = 60  # for the process that reads the installed distributions
_BASES = frozenset({"torch", "triton", "pytorch-triton"})
_SELF = frozenset({"torch", "triton", "tunegate"})  # a worker has these already


def built_on_torch(requires: Iterable[str] | None) -> bool:
    """Whether a distribution's requirements (`Distribution.requires`) name torch or Triton
    (extras too: a library of kernels often makes its torch an extra, as fla-core does)."""
    for line in requires or ():
        try:
            if canonicalize_name(Requirement(line).name) in _BASES:
                return True
        except InvalidRequirement:
            continue
    return False


def torch_packages(path: list[str]) -> set[str]:
    """The top-level packages of the distributions on `path` built on torch or Triton: those
    their `top_level.txt` names, else the first part of each file they install."""
    found: set[str] = set()
    for dist in metadata.distributions(path=path):
        if not built_on_torch(dist.requires):
            continue
        declared = dist.read_text("top_level.txt")
        if declared:
            found.update(line.strip() for line in declared.splitlines() if line.strip())
            continue
        for file in dist.files or ():  # PackagePath: a PurePosixPath
            name = file.parts[0].removesuffix(".py") if file.parts else ""
            if name.isidentifier() and (len(file.parts) > 1 or file.suffix == ".py"):
                found.add(name)
    return found - _SELF


def _scan(path: list[str]) -> set[str]:
    """`torch_packages(path)`, read in a process of its own: parsing the metadata of a few
    hundred distributions (0.3 s and more on a GPU image) in this process's thread would hold
    the program's GIL meanwhile. In this thread if that process cannot run."""
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([package_root, *sys.path])}
    try:
        done = subprocess.run([sys.executable, "-m", "tunegate.autotune.mirror", *path],
                              capture_output=True, text=True, env=env,
                              timeout=SCAN_TIMEOUT_S, check=True)
        return set(json.loads(done.stdout))
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        log.debug("the distributions were read here, not in a process of their own: %s", e)
        return torch_packages(path)


class MirroredImports:
    """The modules of this process seen so far, and which of them to mirror: every module of
    a package built on torch or Triton (a library's `__init__` may import little, and its
    kernels live in submodules the program imports one by one)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._tops: dict[str, bool] = {}  # top-level package: mirrored
        self._torch_packages: set[str] = set()
        self._scanned: list[str] = []  # the sys.path entries whose distributions were read

    def new(self) -> list[str]:
        """The modules imported since the last call that a worker should import too, in the
        order the program began importing them."""
        found = []
        for name in list(sys.modules):
            if name in self.seen:
                continue
            self.seen.add(name)
            top = name.partition(".")[0]
            if top not in self._tops:
                self._tops[top] = self._mirrored(top)
            if self._tops[top]:
                found.append(name)
        return found

    def _mirrored(self, top: str) -> bool:
        if top in _SELF or top.startswith("_") or top in sys.stdlib_module_names \
                or top in sys.builtin_module_names:
            return False
        if top not in self._torch_packages:
            added = [entry for entry in sys.path if entry not in self._scanned]
            self._scanned += added
            # pytest adds each test folder to the path: a folder of no distribution is not read
            if added and next(iter(metadata.distributions(path=added)), None) is not None:
                self._torch_packages |= _scan(added)
        return top in self._torch_packages


def start(poll_s: float = POLL_S) -> threading.Event:
    """Mirror the program's imports from now on, in a daemon thread, until the event returned
    is set (or the process ends)."""
    stop = threading.Event()
    start_thread(_watch, poll_s, stop, name="tunegate-mirror-imports")
    return stop


def _watch(poll_s: float, stop: threading.Event) -> None:
    from .warm import preload

    imports = MirroredImports()
    count = -1
    while not stop.is_set():
        if len(sys.modules) != count:
            count = len(sys.modules)
            try:
                names = imports.new()
            except Exception as e:  # noqa: BLE001 - an optimisation: the tuning imports them
                log.debug("the program's imports could not be mirrored: %s: %s",
                          type(e).__name__, e)
                return
            if names:
                trace.event("mirror imports", first=names[0], modules=len(names))
                preload(*names)
        stop.wait(poll_s)


if __name__ == "__main__":  # `_scan`'s process: the packages, as JSON on stdout
    json.dump(sorted(torch_packages(sys.argv[1:])), sys.stdout)
