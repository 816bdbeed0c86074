"""The program's imports of libraries built on torch or Triton, mirrored in the spare run worker
(and the first few compile workers kept, see `pool.preload`) while the program makes them.

An autotuner's module is sent to the spare run worker when the program defines the autotuner
(`warm.preload`), which under pytest is collection, a second before the first tuning; the
worker's import of it then imports the whole library anew (Liger-Kernel with transformers took
14.4 s on an H200 host, all of it in the first tuning). From warm-up on, each package the
program imports whose distribution names torch or Triton among its requirements is sent to the
worker as the program imports it (each of its modules), so the two imports overlap instead of
following each other.
Packages of the standard library, of no distribution, or built on neither are left alone.
"""

from __future__ import annotations

import importlib.metadata as metadata
import logging
import sys
import threading

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from . import trace

__all__ = ["MirroredImports", "built_on_torch", "start"]

log = logging.getLogger(__name__)

POLL_S = 0.25  # how often the program's modules are looked at (a scan costs well under 1 ms)
_BASES = frozenset({"torch", "triton", "pytorch-triton"})
_SELF = frozenset({"torch", "triton", "tunegate"})  # a worker has these already


def built_on_torch(distribution: str) -> bool:
    """Whether `distribution` names torch or Triton among its requirements (extras too: a
    library of kernels often makes its torch an extra, as fla-core does)."""
    try:
        requires = metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return False
    for line in requires:
        try:
            if canonicalize_name(Requirement(line).name) in _BASES:
                return True
        except InvalidRequirement:
            continue
    return False


class MirroredImports:
    """The modules of this process seen so far, and which of them to mirror: every module of
    a package built on torch or Triton (a library's `__init__` may import little, and its
    kernels live in submodules the program imports one by one)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._tops: dict[str, bool] = {}  # top-level package: mirrored
        self._owners: dict[str, list[str]] = {}
        self._owners_path: list[str] | None = None  # sys.path when last looked at
        self._built_on_torch: dict[str, bool] = {}

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
        dists = self._owners.get(top)
        if dists is None and self._path_has_new_distributions():
            self._owners = metadata.packages_distributions()
            dists = self._owners.get(top)
        for dist in dists or ():
            if dist not in self._built_on_torch:
                self._built_on_torch[dist] = built_on_torch(dist)
            if self._built_on_torch[dist]:
                return True
        return False

    def _path_has_new_distributions(self) -> bool:
        """Whether `sys.path` has an entry holding distributions since `_owners` was read.
        Reading it scans every distribution (0.3 s where a GPU image has a few hundred, in a
        thread that holds the program's GIL), and pytest adds each test folder to the path."""
        if self._owners_path is None:
            added = list(sys.path)
        else:
            added = [entry for entry in sys.path if entry not in self._owners_path]
        self._owners_path = list(sys.path)
        return bool(added) and next(iter(metadata.distributions(path=added)), None) is not None


def start(poll_s: float = POLL_S) -> threading.Event:
    """Mirror the program's imports from now on, in a daemon thread, until the event returned
    is set (or the process ends)."""
    stop = threading.Event()
    threading.Thread(target=_watch, args=(poll_s, stop), daemon=True,
                     name="tunegate-mirror-imports").start()
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
