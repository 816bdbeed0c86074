"""Two rules for text that every layer shares: which characters are unsafe to show on a
terminal, and the short hash that names things (fingerprints, digests, module names)."""

from __future__ import annotations

import hashlib
import re

__all__ = ["UNSAFE", "short_hash"]

# C0 and C1 controls (ANSI escapes start with one), DEL, and the invisible or reordering
# format characters that could make a rule's text lie about what is on the screen.
UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def short_hash(text: str, length: int = 16) -> str:
    """The first `length` hex digits of `text`'s SHA-256: stable across runs and machines."""
    return hashlib.sha256(text.encode()).hexdigest()[:length]
