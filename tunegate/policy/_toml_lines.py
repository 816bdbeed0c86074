"""Where things were written in a TOML text: a lenient scanner for blame, not a parser.

`tomllib` gives values without positions. `scan` walks the text once, skipping strings and
comments, and records the line of every table header, key, array item and inline-table key by
its path (`("rule", 0, "when", "triton")`, `("rule", 0, "features", 1)`), so a problem found in
the parsed data can name its true line, even inside a multi-line array or an inline `rule = [...]`
(a `[[rule]]` inside a multi-line string is not a header). It also finds what would make
`tomllib` itself fail badly: nesting deeper than a limit (brackets, or parts of a dotted key)
and numbers too long to convert. It
never raises, whatever the text.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

__all__ = ["Layout", "scan"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
_NUMBER = re.compile(r"[0-9_]+")
_PLAIN = re.compile(r"""[^"'#\n\[\]{}0-9.=,]*""")
_STRINGS = (  # multi-line first; up to two quotes may end a multi-line string's content
    re.compile(r'"""(?:[^"\\]++|\\.|"(?!""))*+""""{0,2}', re.DOTALL),
    re.compile(r"'''(?:[^']++|'(?!''))*+''''{0,2}", re.DOTALL),
    re.compile(r'"(?:[^"\\\n]++|\\.)*+"?'),
    re.compile(r"'[^'\n]*'?"),
)
_LONGEST_NUMBER = 100

Path = tuple[str | int, ...]


@dataclass
class Layout:
    """Line of each key path; the first too-deep bracket and the first over-long number."""

    lines: dict[Path, int] = field(default_factory=dict)
    too_deep: int | None = None  # line of the first bracket past the nesting limit
    long_number: int | None = None  # line of the first number of more than 100 digits
    long_key: int | None = None  # line of the first dotted key of more parts than the limit

    def line_of(self, loc: Path) -> int | None:
        """The line of the longest prefix of `loc` that was written, if any."""
        for n in range(len(loc), 0, -1):
            line = self.lines.get(tuple(loc[:n]))
            if line is not None:
                return line
        return None


def _unescape(raw: str) -> str:
    """A basic string's content with its escapes decoded, as tomllib decodes a quoted key."""
    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if code[0] in "uU" and len(code) > 1:
            value = int(code[1:], 16)
            return chr(value) if value <= 0x10FFFF else m.group()
        return _SIMPLE_ESCAPES.get(code, m.group())
    return _ESCAPE.sub(one, raw)


@dataclass
class _Frame:
    """An open array (`index` counts its items) or inline table (`index` is None)."""

    path: Path
    index: int | None


class _Scanner:
    def __init__(self, text: str, max_depth: int) -> None:
        self.text, self.max_depth, self.i = text, max_depth, 0
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.layout = Layout()
        self.table: Path = ()
        self.arrays: dict[Path, int] = {}

    def line(self, pos: int) -> int:
        return bisect.bisect_left(self.newlines, pos) + 1

    def peek(self, n: int = 1) -> str:
        return self.text[self.i:self.i + n]

    def skip_blank(self, newlines: bool) -> None:
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == "#":
                end = self.text.find("\n", self.i)
                self.i = len(self.text) if end < 0 else end
            elif c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            else:
                return

    def run(self) -> Layout:
        while True:
            self.skip_blank(newlines=True)
            if self.i >= len(self.text):
                return self.layout
            start = self.i
            if self.peek() == "[":
                self.header()
            else:
                self.key_value()
            if self.i == start:  # confused by invalid text: move on to the next line
                end = self.text.find("\n", self.i)
                self.i = len(self.text) if end < 0 else end + 1

    def key_path(self) -> list[str]:
        """A dotted key (bare or quoted parts); stops at what cannot continue one. A key of more
        parts than the nesting limit stops the whole scan (the loader reports only that): each
        part is a level of nesting, and recording every prefix would cost quadratic time."""
        parts: list[str] = []
        start = self.i
        while True:
            if len(parts) > self.max_depth:
                self.layout.long_key = self.line(start)
                self.i = len(self.text)
                return []
            self.skip_blank(newlines=False)
            c = self.peek()
            if c in ('"', "'"):
                start = self.i
                self.string()
                raw = self.text[start + 1:self.i - 1]
                parts.append(raw if c == "'" else _unescape(raw))
            elif m := _BARE_KEY.match(self.text, self.i):
                parts.append(m.group())
                self.i = m.end()
            else:
                return parts
            self.skip_blank(newlines=False)
            if self.peek() != ".":
                return parts
            self.i += 1

    def header(self) -> None:
        line = self.line(self.i)
        array = self.peek(2) == "[["
        self.i += 2 if array else 1
        parts = self.key_path()
        self.skip_blank(newlines=False)
        closing = "]]" if array else "]"
        if not parts or self.peek(len(closing)) != closing:
            return
        self.i += len(closing)
        resolved: list[str | int] = []
        for n, part in enumerate(parts):
            resolved.append(part)
            key = tuple(resolved)
            if n == len(parts) - 1 and array:
                index = self.arrays.get(key, 0)
                self.arrays[key] = index + 1
                self.layout.lines.setdefault(key, line)
                resolved.append(index)
            elif key in self.arrays:
                resolved.append(self.arrays[key] - 1)
            self.layout.lines.setdefault(tuple(resolved), line)
        self.table = tuple(resolved)

    def key_value(self) -> None:
        line = self.line(self.i)
        parts = self.key_path()
        self.skip_blank(newlines=False)
        if not parts or self.peek() != "=":
            return
        self.i += 1
        for n in range(1, len(parts) + 1):
            self.layout.lines.setdefault(self.table + tuple(parts[:n]), line)
        self.value(self.table + tuple(parts))

    def string(self) -> None:
        """Skip one string of any of TOML's four kinds, starting at its first quote."""
        for pattern in _STRINGS:
            m = pattern.match(self.text, self.i)
            if m:
                self.i = m.end()
                return
        self.i = len(self.text)  # an unterminated multi-line string runs to the end

    def value(self, path: Path) -> None:
        """Skip a value up to the end of its (last) line, recording the line of every array item
        (`path + (index,)`) and inline-table key inside it, so a bad item is blamed on its own
        line. At a limit the whole scan stops: the loader then reports only that. A dotted key
        counts its parts against the same limit, as does a run of dots in a value."""
        frames: list[_Frame] = []  # the open arrays and inline tables, innermost last
        self.item(path, frames)
        dots = 0
        while self.i < len(self.text):
            self.i = _PLAIN.match(self.text, self.i).end()  # type: ignore[union-attr]
            c = self.peek()
            if not c or (c == "\n" and not frames):
                return
            if c in ('"', "'"):
                self.string()
            elif c == "#":
                self.skip_blank(newlines=False)
            elif c in ".=,":
                dots = dots + 1 if c == "." else 0
                if dots >= self.max_depth:
                    self.layout.long_key = self.line(self.i)
                    self.i = len(self.text)
                    return
                self.i += 1
                if c == "," and frames:
                    self.next_item(frames)
            elif c in "0123456789":
                end = _NUMBER.match(self.text, self.i).end()  # type: ignore[union-attr]
                if end - self.i > _LONGEST_NUMBER:
                    self.layout.long_number = self.line(self.i)
                    self.i = len(self.text)
                    return
                self.i = end
            elif c in "[{":  # where no value may start: still counted against the limit
                dots = 0
                self.open(frames[-1].path if frames else path, frames)
            else:
                dots = 0
                self.i += 1
                if c in "]}" and frames:
                    frames.pop()

    def item(self, path: Path, frames: list[_Frame]) -> None:
        """At the start of a value written for `path`: record its line; open it if it is an
        array or an inline table."""
        self.skip_blank(newlines=bool(frames))
        c = self.peek()
        if not c or c in "]}\n":
            return
        self.layout.lines.setdefault(path, self.line(self.i))
        if c in "[{":
            self.open(path, frames)

    def open(self, path: Path, frames: list[_Frame]) -> None:
        """At a `[` or `{`: enter it (or stop the scan past the nesting limit)."""
        if len(frames) >= self.max_depth:
            self.layout.too_deep = self.line(self.i)
            self.i = len(self.text)
            return
        array = self.peek() == "["
        self.i += 1
        frames.append(_Frame(path, 0 if array else None))
        self.first(frames)

    def first(self, frames: list[_Frame]) -> None:
        """Just inside the innermost container (or past one of its commas): its next item."""
        top = frames[-1]
        if top.index is not None:
            self.item(top.path + (top.index,), frames)
            return
        self.skip_blank(newlines=True)
        line = self.line(self.i)
        parts = self.key_path()
        self.skip_blank(newlines=False)
        if not parts or self.peek() != "=":
            return
        for n in range(1, len(parts) + 1):
            self.layout.lines.setdefault(top.path + tuple(parts[:n]), line)
        self.i += 1
        self.item(top.path + tuple(parts), frames)

    def next_item(self, frames: list[_Frame]) -> None:
        """Past a comma in the innermost container: count the item, then record the next."""
        top = frames[-1]
        if top.index is not None:
            top.index += 1
        self.first(frames)


def scan(text: str, max_depth: int = 32) -> Layout:
    """The layout of a TOML text (lenient: invalid text gives a partial layout, never an error)."""
    return _Scanner(text, max_depth).run()
