"""What the last `tunegate run` of a command tuned, kept beside the store, so that its next run
knows at its start whether it will need workers.

A run that only reuses stored bests re-checks them in its own process: the worker warm-up
(a score of processes, the program's libraries imported again in some of them) then only
competes with the program's own start-up. `expects_reuse` is true when the command's last run
(the same program, arguments and folder) is remembered, every best it ended with is still
stored and not quarantined, and torch and Triton are the versions that run had; the warm-up
then waits for a tuning that needs workers (`warm.warm_up`). A wrong guess costs that tuning
its workers' start, never a result.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

__all__ = ["MEMORY_SUFFIX", "command_id", "expects_reuse", "remember"]

log = logging.getLogger(__name__)

MEMORY_SUFFIX = ".runs.json"
_KEPT = 64  # commands remembered per store; the oldest are forgotten first


def command_id(target: str, args: Sequence[str], module: bool) -> str:
    """The identity of a command line: its program, arguments and working folder."""
    text = json.dumps([os.getcwd(), module, target, list(args)])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _memory_path(store_path: str | os.PathLike[str]) -> Path:
    return Path(f"{store_path}{MEMORY_SUFFIX}")


def _versions() -> dict[str, str]:
    """The versions a stored best's environment key depends on that can be read without
    starting CUDA (the program is about to fork the worker server)."""
    return {name: str(getattr(sys.modules.get(name), "__version__", "")) for name in
            ("torch", "triton")}


def _read(path: Path) -> dict[str, Any]:
    try:
        memory = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return memory if isinstance(memory, dict) else {}


def remember(store_path: str | os.PathLike[str], command: str,
             keys: Sequence[tuple[str, str, str]] | None) -> None:
    """Keep the store keys (task, problem, environment) of the bests the run of `command`
    ended with; None (a tuning ended without a best) forgets the command. A memory that
    cannot be written is only a lost guess."""
    path = _memory_path(store_path)
    memory = _read(path)
    memory.pop(command, None)
    if keys is not None:
        memory[command] = {"keys": [list(k) for k in keys], "versions": _versions(),
                           "when": time.time()}
    newest = sorted(memory.items(), key=lambda kv: _when(kv[1]), reverse=True)[:_KEPT]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(dict(newest), f)
        os.replace(tmp, path)  # concurrent runs: one of them wins, whole
    except OSError as e:
        log.debug("what this run tuned is not remembered: %s", e)


def _when(entry: Any) -> float:
    return float(entry.get("when", 0.0)) if isinstance(entry, dict) else 0.0


def expects_reuse(store_path: str | os.PathLike[str], command: str) -> bool:
    """Whether the run of `command` is expected to reuse every best it needs (see the module
    docstring); False whenever in doubt."""
    entry = _read(_memory_path(store_path)).get(command)
    if not isinstance(entry, dict) or entry.get("versions") != _versions():
        return False
    keys = entry.get("keys")
    if not isinstance(keys, list) or not all(
            isinstance(k, list) and len(k) == 3 and all(isinstance(p, str) for p in k)
            for k in keys):
        return False
    if not keys:
        return True  # its last run tuned nothing in its own process
    from .store import StoreError, open_store

    try:
        store = open_store(store_path)
        return all(store.best(*k) is not None for k in keys)
    except (StoreError, OSError) as e:
        log.debug("the store could not say what this run will reuse: %s", e)
        return False
