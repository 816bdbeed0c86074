"""Tokenizer and recursive-descent parser for `match` predicates. Nothing is evaluated here.

Grammar::

    expr       := conj ("or" conj)*
    conj       := neg ("and" neg)*
    neg        := "not" neg | comparison
    comparison := operand [CMP operand | ["not"] "in" list]
    operand    := NAME | literal | "(" expr ")"
    literal    := INT | FLOAT | STRING | "true" | "false" | "none" | list
    list       := "[" [literal ("," literal)*] "]"
    CMP        := "==" | "!=" | "<" | "<=" | ">" | ">="
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple, Union
from .._text import UNSAFE
from ..errors import TunegateError

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<float>-?\d+\.\d*(?:[eE][-+]?\d+)?)
  | (?P<int>-?\d+)
  | (?P<string>'[^']*'|"[^"]*")
  | (?P<op>==|!=|<=|>=|<|>)
  | (?P<punct>[()\[\],])
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE | re.ASCII,  # '١٢' is not a number here: only ASCII digits and spaces
)
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "none"}
MAX_LENGTH = 4096
MAX_DEPTH = 32  # parentheses, `not`s and nested lists together
MAX_DIGITS = 30




class PredicateSyntaxError(ValueError, TunegateError):
    """Bad predicate text; `pos` is the offset of the offending character."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        self.text, self.pos = text, pos
        shown = UNSAFE.sub("\ufffd", text)  # one character each: the caret still points
        super().__init__(f"{message}\n    {shown}\n    {' ' * pos}^")


# Tokens and tree nodes are NamedTuples, not dataclasses: as immutable, and a class costs a
# tenth as much to create (each frozen dataclass compiles six methods at import).
class Token(NamedTuple):
    kind: str  # name, keyword, int, float, string, op, punct, end
    value: str
    pos: int


def tokenize(text: str) -> list[Token]:
    if len(text) > MAX_LENGTH:
        raise PredicateSyntaxError(f"a predicate of {len(text)} characters is too long (at most "
                                   f"{MAX_LENGTH})", text[:60] + "...", 0)
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise PredicateSyntaxError(f"unexpected character {text[pos]!r}", text, pos)
        kind = m.lastgroup or ""
        if kind in ("int", "float") and len(m.group().lstrip("-").replace(".", "")) > MAX_DIGITS:
            raise PredicateSyntaxError(f"a number of more than {MAX_DIGITS} digits", text, pos)
        if kind != "ws":
            value = m.group()
            if kind == "name" and value.lower() in _KEYWORDS:
                kind, value = "keyword", value.lower()
            tokens.append(Token(kind, value, pos))
        pos = m.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


class Name(NamedTuple):
    name: str
    pos: int


class Literal(NamedTuple):
    value: Any


class Compare(NamedTuple):
    left: "Operand"
    op: str  # a CMP, "in" or "not in"
    right: "Operand"


class BoolOp(NamedTuple):
    op: str  # "and" | "or"
    items: tuple["Node", ...]


class Not(NamedTuple):
    item: "Node"


Operand = Union[Name, Literal, "Node"]
Node = Union[Compare, BoolOp, Not, Name, Literal]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0

    def nest(self) -> None:
        """Count one more level of nesting; refuse past MAX_DEPTH (the parser is recursive)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nested more than {MAX_DEPTH} levels deep")

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def error(self, message: str, tok: Token | None = None) -> PredicateSyntaxError:
        tok = tok or self.peek()
        found = "end of text" if tok.kind == "end" else repr(tok.value)
        return PredicateSyntaxError(f"{message}, found {found}", self.text, tok.pos)

    def accept(self, kind: str, value: str) -> bool:
        tok = self.peek()
        if tok.kind == kind and tok.value == value:
            self.i += 1
            return True
        return False

    def expect(self, kind: str, value: str) -> None:
        if not self.accept(kind, value):
            raise self.error(f"expected {value!r}")

    def parse(self) -> Node:
        if self.peek().kind == "end":
            raise self.error("expected a predicate")
        node = self.expr()
        if self.peek().kind != "end":
            raise self.error("expected 'and', 'or' or the end")
        return node

    def expr(self) -> Node:
        return self._bool("or", self.conj)

    def conj(self) -> Node:
        return self._bool("and", self.neg)

    def _bool(self, op: str, sub: Any) -> Node:
        items = [sub()]
        while self.accept("keyword", op):
            items.append(sub())
        return items[0] if len(items) == 1 else BoolOp(op, tuple(items))

    def neg(self) -> Node:
        if self.accept("keyword", "not"):
            self.nest()
            node = Not(self.neg())
            self.depth -= 1
            return node
        return self.comparison()

    def comparison(self) -> Node:
        left = self.operand()
        tok = self.peek()
        if tok.kind == "op":
            self.take()
            return Compare(left, tok.value, self.operand())
        if self.accept("keyword", "in"):
            return Compare(left, "in", Literal(self.list_literal()))
        if tok.kind == "keyword" and tok.value == "not":
            self.take()
            self.expect("keyword", "in")
            return Compare(left, "not in", Literal(self.list_literal()))
        return left

    def operand(self) -> Node:
        tok = self.peek()
        if tok.kind == "name":
            self.take()
            return Name(tok.value, tok.pos)
        if self.accept("punct", "("):
            self.nest()
            node = self.expr()
            self.expect("punct", ")")
            self.depth -= 1
            return node
        return Literal(self.literal())

    def literal(self) -> Any:
        tok = self.take()
        if tok.kind == "int":
            return int(tok.value)
        if tok.kind == "float":
            value = float(tok.value)
            if not math.isfinite(value):
                raise self.error("a number too large", tok)
            return value
        if tok.kind == "string":
            return tok.value[1:-1]
        if tok.kind == "keyword" and tok.value in ("true", "false", "none"):
            return {"true": True, "false": False, "none": None}[tok.value]
        if tok.kind == "punct" and tok.value == "[":
            self.i -= 1
            return self.list_literal()
        raise self.error("expected a name, a number, a string, true, false, none or a list", tok)

    def list_literal(self) -> tuple[Any, ...]:
        self.expect("punct", "[")
        self.nest()
        items: list[Any] = []
        if not self.accept("punct", "]"):
            items.append(self.literal())
            while self.accept("punct", ","):
                items.append(self.literal())
            self.expect("punct", "]")
        self.depth -= 1
        return tuple(items)


def parse(text: str) -> Node:
    """The syntax tree of a predicate, or `PredicateSyntaxError` pointing at the bad text."""
    return _Parser(text).parse()
