"""What a launch is checked against: the expected state of its tensors on one input draw, from the
reference function (here) or the baseline config (made by the runner's two poisoned launches)."""

from __future__ import annotations

from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, PrivateAttr

from ..errors import TunegateError
from .nested import assemble
from .task import Args, Task

__all__ = ["BaselineError", "Expected", "reference_outputs", "tensors_of"]


class BaselineError(RuntimeError, TunegateError):
    """The reference or baseline config itself failed: nothing can be checked against it."""


def tensors_of(args: Args) -> dict[str, torch.Tensor]:
    return {k: v for k, v in args.items() if isinstance(v, torch.Tensor)}


class Expected(BaseModel):
    """The expected state of the compared tensors after a launch on one draw; `written` masks
    the elements of a tensor that the baseline writes (the others are not compared);
    `margins`, the memory around and between the tensors of each copied storage, as a launch
    must leave it (`copies.margins`); `drawn`, the draw it was made from, and `_slack`, its
    `check.sensitivity` there once measured (see `Runner._slack`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    tensors: dict[str, torch.Tensor]
    written: dict[str, torch.Tensor] = {}
    margins: dict[tuple[str, ...], torch.Tensor] = {}
    drawn: dict[str, Any]
    _slack: dict[str, torch.Tensor] | None = PrivateAttr(default=None)

    def compared(self, args: Args) -> dict[str, torch.Tensor]:
        """The compared tensors of a launch's `args`, unwritten elements taken from here."""
        return {n: args[n] if n not in self.written else
                torch.where(self.written[n], args[n], want.to(args[n].device, args[n].dtype))
                for n, want in self.tensors.items()}


def reference_outputs(task: Task, args: Args, zeroed: tuple[str, ...]
                      ) -> dict[str, torch.Tensor]:
    """The state of every tensor after the reference ran on `args` (copies of a draw: see
    `copies.copy_tensors`; `zeroed` outputs zeroed first, as the kernel sees them); a
    BaselineError says what it got wrong."""
    assert task.reference is not None
    for name in zeroed:  # as the kernel sees them
        args[name].zero_()
    try:
        returned = task.reference(**assemble(args))
    except Exception as e:
        raise BaselineError(f"the reference function raised {type(e).__name__}: {e}") from e
    expected = tensors_of(args)
    if isinstance(returned, torch.Tensor):
        returned = (returned,)
    if isinstance(returned, (tuple, list)):
        if len(returned) != len(task.outputs):
            raise BaselineError(f"the reference returned {len(returned)} tensors for "
                                f"{len(task.outputs)} outputs {task.outputs}")
        returned = dict(zip(task.outputs, returned))
    if returned is not None and not isinstance(returned, dict):
        raise BaselineError(f"the reference returned {type(returned).__name__}: return a "
                            "tensor, a tuple in `outputs` order, a dict, or None")
    for name, value in (returned or {}).items():
        if not isinstance(value, torch.Tensor):
            raise BaselineError(f"the reference's {name!r} is {type(value).__name__}, not "
                                "a tensor")
        if name not in expected:
            raise BaselineError(f"the reference returned {name!r}, which is not a tensor "
                                "argument")
        if tuple(value.shape) != tuple(expected[name].shape):
            raise BaselineError(f"the reference's {name!r} has shape {tuple(value.shape)}, "
                                f"but the argument has shape {tuple(expected[name].shape)}")
        expected[name] = value
    return expected
