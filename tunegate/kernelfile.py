"""`FILE[:NAME]` references to kernels and tuning tasks in a user's Python file.

Importing the file runs the user's own code (it defines their kernels); policies are never run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from .errors import TunegateError

__all__ = ["KernelFileError", "load_module", "resolve"]


class KernelFileError(ValueError, TunegateError):
    """The file cannot be imported, or has no object of that name."""


def load_module(path: str | Path) -> ModuleType:
    """Import a Python file by path, once per process (keyed by its resolved path)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise KernelFileError(f"{path}: no such file")
    name = "tunegate_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise KernelFileError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's file failed: report it, naming the file
        del sys.modules[name]
        raise KernelFileError(f"{path}: importing it raised {type(e).__name__}: {e}") from e
    return module


def resolve(reference: str, want: type | tuple[type, ...] | None = None) -> tuple[Path, Any]:
    """The file and the object `FILE:NAME` names; without NAME, the only `want` in the file."""
    file, sep, name = reference.rpartition(":")
    if not sep:
        file, name = reference, ""
    module = load_module(file)
    if name:
        if not hasattr(module, name):
            raise KernelFileError(f"{file}: no object named {name!r}")
        return Path(file), getattr(module, name)
    if want is None:
        raise KernelFileError(f"{reference}: say which object, as FILE:NAME")
    found = {k: v for k, v in vars(module).items() if isinstance(v, want)}
    if len(found) != 1:
        raise KernelFileError(
            f"{file}: {'several' if found else 'no'} candidates"
            + (f" ({', '.join(found)}); say which, as FILE:NAME" if found else "")
        )
    return Path(file), next(iter(found.values()))
