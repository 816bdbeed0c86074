"""The environment a policy is evaluated in: versions, device, compute capability.

Versions come from package metadata, so reading them imports neither torch nor triton. The
device is probed only when asked for; a host with no GPU driver is known to be CPU-only without
importing torch. Every fact can be overridden,
for what-if explanations and tests; a fact that is `None` is unknown.
"""

# No `from __future__ import annotations`: pydantic would compile each string annotation to
# build the models, which costs more at import than evaluated annotations.
import ast
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .versions import InvalidGate, parse_version
from .._text import UNSAFE, short_hash
from ..errors import TunegateError

__all__ = ["ENV_FACTS", "Environment", "InvalidEnvironment", "detect_environment"]

ENV_FACTS = ("triton", "torch", "python", "cuda", "device", "capability", "gpu")
_VERSION_FACTS = ("triton", "torch", "python", "cuda", "capability")
_TRITON_DISTS = ("triton", "pytorch-triton", "triton-rocm", "pytorch-triton-rocm")


class InvalidEnvironment(ValueError, TunegateError):
    """An override that names no fact or gives a value the fact cannot take."""


class Environment(BaseModel):
    """Facts about where kernels will run. `None` means unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    triton: str | None = None
    torch: str | None = None
    python: str | None = None
    cuda: str | None = None
    device: Literal["cuda", "hip", "cpu"] | None = None
    capability: str | None = None
    gpu: str | None = None
    range_args: tuple[str, ...] | None = None  # keyword arguments of the installed tl.range
    overridden: tuple[str, ...] = ()

    @field_validator(*_VERSION_FACTS)
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_version(value)
            except InvalidGate as e:
                raise ValueError(str(e)) from None
        return value

    def fact(self, name: str) -> Any:
        return getattr(self, name)

    def with_overrides(self, overrides: Mapping[str, str | None]) -> "Environment":
        """A copy with the given facts replaced; 'unknown' (or `None`) makes a fact unknown.

        Every key and value is checked here, so a bad override is an `InvalidEnvironment` that
        names it, never a failure later.
        """
        data = self.model_dump()
        for key, value in overrides.items():
            data[key] = _override_value(key, value)
        if "triton" in overrides and data["triton"] != self.triton:
            data["range_args"] = None  # the probed signature is the installed Triton's
        data["overridden"] = tuple(sorted(set(self.overridden) | set(overrides)))
        try:
            return Environment(**data)
        except ValidationError as e:  # _override_value should have caught it: say which
            raise InvalidEnvironment(f"environment overrides {dict(overrides)!r}: "
                                     f"{e.errors()[0]['msg']}") from None

    def fingerprint(self) -> str:
        """A short stable hash of the facts that change generated code or its behaviour."""
        facts = self.model_dump(exclude={"overridden", "range_args"})
        text = ";".join(f"{k}={facts[k]}" for k in sorted(facts))
        return short_hash(text)

    def describe(self) -> dict[str, str]:
        """Each fact as text, 'unknown' where it is not known."""
        return {k: "unknown" if getattr(self, k) is None else str(getattr(self, k))
                for k in ENV_FACTS}


_UNKNOWN = ("unknown", "none")
_MAX_VALUE = 200


def _override_value(key: Any, value: Any) -> str | None:
    """The checked value of one override, or `InvalidEnvironment` naming key and value."""
    if not isinstance(key, str) or key not in ENV_FACTS:
        raise InvalidEnvironment(
            f"unknown environment fact {str(key)[:60]!r} (known: {', '.join(ENV_FACTS)})")
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidEnvironment(f"environment fact {key}: the value must be text, got "
                                 f"{type(value).__name__}")

    def bad(why: str) -> InvalidEnvironment:
        shown = value if len(value) <= 60 else value[:57] + "..."
        return InvalidEnvironment(f"environment fact {key} = {shown!r}: {why}")

    if value.strip() == "":
        raise bad("empty; give a value, or 'unknown' to make the fact unknown")
    if value.lower() in _UNKNOWN:
        return None
    if len(value) > _MAX_VALUE:
        raise bad(f"longer than {_MAX_VALUE} characters")
    if UNSAFE.search(value) or value != value.strip():
        raise bad("control characters or surrounding spaces are not allowed")
    if key == "device" and value not in ("cuda", "hip", "cpu"):
        raise bad("the device must be cuda, hip or cpu")
    if key in _VERSION_FACTS:
        try:
            parse_version(value)
        except InvalidGate:
            what = "a compute capability such as 9.0" if key == "capability" else "a version"
            raise bad(f"not {what}") from None
    return value


def _dist_version(names: tuple[str, ...]) -> str | None:
    """The installed version of the first of `names` that is installed, else None."""
    for name in names:
        version = _scan_dist_version(name)
        if version is not None:
            return version
    import importlib.metadata as metadata  # only a distribution the scan missed pays for it

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _scan_dist_version(name: str) -> str | None:
    """`name`'s version from the first `*.dist-info/METADATA` on sys.path (importlib.metadata's
    answer, without importing it: that pulls in email and zipfile)."""
    wanted = re.sub(r"[-_.]+", "_", name).lower()
    for entry in sys.path:
        try:
            children = os.listdir(entry or ".")
        except OSError:
            continue
        for child in children:
            stem, dot, suffix = child.rpartition(".")
            if suffix != "dist-info" or not dot:
                continue
            if re.sub(r"[-_.]+", "_", stem.partition("-")[0]).lower() != wanted:
                continue
            version = _metadata_version(Path(entry or ".", child, "METADATA"))
            if version is not None:
                return version
    return None


def _metadata_version(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip()
                if not line.strip():  # the headers end at the first blank line
                    break
    except OSError:
        pass
    return None


def _package_file(package: str, name: str) -> Path | None:
    """The path of `name` inside the installed top-level `package`, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0], name)


def _torch_cuda_version() -> str | None:
    """The CUDA version torch was built with, read from its version.py without importing it."""
    path = _package_file("torch", "version.py")
    try:
        text = path.read_text(encoding="utf-8") if path is not None else ""
    except OSError:
        return None
    m = re.search(r"^cuda\b[^=]*=\s*['\"]([\d.]+)['\"]", text, re.MULTILINE)
    return m.group(1) if m else None


def _probe_range_args() -> tuple[str, ...] | None:
    """The keyword arguments of the installed `tl.range`: read from triton/language/core.py's
    source where it can be, else by importing triton.language."""
    parsed = _parse_range_args(_package_file("triton", "language/core.py"))
    if parsed is not None:
        return parsed
    try:
        import inspect

        import triton.language as tl
    except ImportError:
        return None
    return tuple(p for p in inspect.signature(tl.range.__init__).parameters if p != "self")


_RANGE_CLASS = re.compile(r"^class range\b.*?(?=^\S)", re.MULTILINE | re.DOTALL)


def _parse_range_args(path: Path | None) -> tuple[str, ...] | None:
    """`class range`'s `__init__` parameters in the source at `path`, or None if not found."""
    try:
        source = path.read_text(encoding="utf-8") if path is not None else ""
    except (OSError, UnicodeDecodeError):
        return None
    start = max(source.find("class range"), 0)  # not from the top: that scan costs ~1 ms
    found = _RANGE_CLASS.search(source + "\nend", start)
    if found is None:
        return None
    try:
        tree = ast.parse(found.group(0))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            a = node.args
            names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            if a.vararg or a.kwarg:
                return None  # the signature hides its arguments: ask the real one
            return tuple(n for n in names if n != "self")
    return None


_GPU_DRIVER_FILES = ("/proc/driver/nvidia/version", "/dev/kfd")


def _has_gpu_driver() -> bool:
    """Whether an NVIDIA or AMD GPU driver is present (without it torch finds no GPU)."""
    if any(os.path.exists(path) for path in _GPU_DRIVER_FILES):
        return True
    try:
        return any(name.startswith("nvidia") for name in os.listdir("/dev"))
    except OSError:
        return True  # cannot tell: let torch decide


def _probe_device() -> dict[str, str | None]:
    if os.environ.get("TRITON_INTERPRET") == "1" or os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return {"device": "cpu"}
    if not _has_gpu_driver():
        return {"device": "cpu"}
    try:
        import torch
    except ImportError:
        return {"device": "cpu"}
    if not torch.cuda.is_available():
        return {"device": "cpu"}
    major, minor = torch.cuda.get_device_capability()
    return {
        "device": "hip" if getattr(torch.version, "hip", None) else "cuda",
        "capability": f"{major}.{minor}",
        "gpu": torch.cuda.get_device_name(),
    }


def detect_environment(*, probe_device: bool = False) -> Environment:
    """The installed versions; with `probe_device`, also the device, its capability and the
    installed `tl.range`'s arguments (torch is imported only on a host with a GPU driver)."""
    facts: dict[str, Any] = {
        "triton": _dist_version(_TRITON_DISTS),
        "torch": _dist_version(("torch",)),
        "python": "{}.{}.{}".format(*sys.version_info[:3]),
        "cuda": _torch_cuda_version(),
    }
    if probe_device:
        facts.update(_probe_device())
        facts["range_args"] = _probe_range_args()
    return Environment(**facts)
