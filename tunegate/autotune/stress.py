"""How hard a config is checked: a stress check of many poisoned launches over fresh draws.

Races exist that corrupt a few percent of launches (triton#6691 at num_stages=4 on an H200: 5
of 200). A check of n launches misses a race of per-launch probability p with probability
(1 - p)^n: 2 launches miss a 2% race 96% of the time, 200 launches 1.8% of the time, 300
launches 0.2%. So the GPU default is at least 200 launches, more while the time budget lasts
(0.25 s, at most 1000 launches: a 0.1 ms kernel gets ~800), a budget that shrinks to 2% of the
tuning's time so far for the winner of a short tuning, so that the launches beyond the
minimum never make checking the larger part of a quick tuning. That check is for the config
that is returned; configs that use an experimental feature get a quarter of it during the search
(50 launches catch a 2% race 64% of the time, a 5% race 92%), so that checking stays a few
percent of tuning time, and whichever of them wins still gets the whole check. The interpreter
runs one program at a time and has no races to find, so its default only needs to catch faults
that recur every few launches.

Faults that depend on the input need draws, not launches: a bug that shows on 1 input in 3 is
missed by n draws with probability (2/3)^n, so on a GPU, where a draw is cheap, the default is
12 fresh draws ((2/3)^12 = 0.8%: caught with >= 99% probability), each launched at least once.
Under the interpreter a launch costs seconds, so its default stays at 4 draws ((2/3)^4 = 20%
missed); ask for `draws=12` there to get the same guarantee. No more draws than launches.

The launches are for races, so a config with no race hazard (`hazards.race_hazards`: no
pipelined, TMA or warp-specialized loads, no async dot, no addresses programs share) gets only
its draws, each launched once, and again under the second poison where the first could hide
an unwritten element (`Runner.hides_unwritten`: an output that should hold NaN somewhere):
12 launches on a GPU, where a 200-launch check of a 0.1 ms kernel was 7% of a 1.5 s tuning
(restoring, poisoning and comparing included).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..limits import MAX_DRAWS, MAX_LAUNCHES
from .mismatch import Mismatch

__all__ = ["StressCheck", "StressReport"]

DRAWS = {"gpu": 12, "interpreter": 4}  # gpu: (2/3)^12 <= 0.01, a 1-in-3 input bug caught
EXTRA_SHARE = 0.02  # the launches beyond the minimum: at most this share of the tuning so far


class StressCheck(BaseModel):
    """Launches per stress check: at least `min_launches`, then more while `seconds` last, at
    most `max_launches`, spread round-robin over `draws` fresh input draws. None = the default
    for where kernels run (`resolved`)."""

    model_config = ConfigDict(frozen=True)

    min_launches: int | None = Field(default=None, ge=1, le=MAX_LAUNCHES)
    max_launches: int | None = Field(default=None, ge=1, le=MAX_LAUNCHES)
    seconds: float | None = Field(default=None, ge=0)
    draws: int | None = Field(default=None, ge=1, le=MAX_DRAWS)

    @model_validator(mode="after")
    def _ordered(self) -> "StressCheck":
        if (self.min_launches is not None and self.max_launches is not None
                and self.min_launches > self.max_launches):
            raise ValueError(f"min_launches <= max_launches must hold, but got "
                             f"{self.min_launches} > {self.max_launches}")
        return self

    def resolved(self, kind: str, tuned_seconds: float | None = None,
                 can_race: bool = True) -> "StressCheck":
        """Every field set: the given values, else the defaults for 'gpu' or 'interpreter';
        on a GPU, with `tuned_seconds` (how long the tuning has taken), the default time budget
        is at most EXTRA_SHARE of it (the interpreter's launches cost seconds each: its
        budget only ever buys the few beyond its minimum). A config that cannot race (no
        `hazards.race_hazards`) has no race to find: by default each of its draws is launched
        once (the runner adds the second poison where it is needed), and no more."""
        gpu = kind == "gpu"
        draws_default = DRAWS["gpu" if gpu else "interpreter"]
        if not can_race:
            draws = self.draws or draws_default
            low = self.min_launches or min(draws, self.max_launches or draws)
            return StressCheck(min_launches=low, max_launches=max(low, self.max_launches or low),
                               seconds=self.seconds or 0.0, draws=min(draws, low))
        seconds = 0.25 if gpu else 2.0
        if gpu and tuned_seconds is not None:
            seconds = min(seconds, EXTRA_SHARE * tuned_seconds)
        low = self.min_launches or (200 if gpu else 8)
        draws = self.draws or min(draws_default, low)
        low = max(low, draws)
        return StressCheck(min_launches=low,
                           max_launches=max(low, self.max_launches or (1000 if gpu else 16)),
                           seconds=self.seconds if self.seconds is not None else seconds,
                           draws=draws)

    def light(self, kind: str) -> "StressCheck":
        """A quarter of the resolved check (launches and seconds; no more draws than launches):
        for the experimental configs of a search, which must still pass the whole check to win."""
        full = self.resolved(kind)
        assert full.min_launches and full.max_launches and full.draws and full.seconds is not None
        low = max(1, full.min_launches // 4)
        return StressCheck(min_launches=low, max_launches=max(1, full.max_launches // 4),
                           seconds=full.seconds / 4, draws=min(full.draws, low))


class StressReport(BaseModel):
    """What a stress check saw."""

    model_config = ConfigDict(frozen=True)

    launches: int
    draws: int
    wrong: int  # launches whose output did not match the expected one
    differing: int  # launches whose bits differ from the first launch on the same draw
    deterministic: bool  # whether launches were required to agree bit for bit
    first_mismatch: Mismatch | None = None
    first_wrong_draw: int | None = None
    seconds: float = 0.0
    not_compared: dict[str, str] = {}  # argument: why it is not compared (see `runner`)

    @property
    def passed(self) -> bool:
        return self.wrong == 0 and (not self.deterministic or self.differing == 0)

    def summary(self) -> str:
        """One line: what failed, in how many launches, with the first mismatch."""
        parts = []
        if self.wrong:
            parts.append(f"wrong in {self.wrong} of {self.launches} launches over {self.draws} "
                         "fresh draws")
        if self.deterministic and self.differing:
            parts.append(f"{self.differing} of {self.launches} launches differ bit for bit from "
                         "the first launch on the same input (the kernel has no atomics: its "
                         "output must not vary)")
        skipped = "".join(f"; {n} not compared ({why})" for n, why in self.not_compared.items())
        if not parts:
            return (f"right and repeatable in {self.launches} launches over {self.draws} fresh "
                    f"input draws{skipped}")
        if self.wrong and self.first_wrong_draw is not None:
            parts[0] += f" (first on draw {self.first_wrong_draw})"
        text = "; ".join(parts)
        if self.first_mismatch is not None:
            text += ": " + self.first_mismatch.summary()
        return text + skipped
