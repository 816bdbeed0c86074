"""Collect every literal `helion.Config(...)` in Helion's repository into tests/data/helion_configs.json.

The file is what `tests/space/test_helion_real_configs.py` parses: 100% of the configs Helion's own
examples, tests and docs write must read with tunegate's Helion schema. Run it again on purpose
against a newer checkout (a bare git directory is enough; nothing is executed):

    python benchmarks/helion_collect_configs.py /path/to/helion.git [--rev HEAD]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "helion_configs.json"
ROOTS = ("examples/", "test/", "docs/", "benchmarks/", "README.md")
_CODE_START = re.compile(r"\b(?:helion\.)?Config\(")


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True,
                          text=True).stdout


def _is_config_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or node.args or not node.keywords:
        return False
    f = node.func
    return ((isinstance(f, ast.Attribute) and f.attr == "Config"
             and isinstance(f.value, ast.Name) and f.value.id == "helion")
            or (isinstance(f, ast.Name) and f.id == "Config"))


def _literal(node: ast.Call) -> bool:
    """Whether every keyword is a literal: configs built from variables are not written configs."""
    for kw in node.keywords:
        if kw.arg is None:
            return False
        try:
            ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            return False
    return True


def _from_python(source: str) -> list[tuple[int, str]]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [(n.lineno, ast.get_source_segment(source, n)) for n in ast.walk(tree)
            if _is_config_call(n) and _literal(n)]


def _from_text(source: str) -> list[tuple[int, str]]:
    """`helion.Config(...)` written in Markdown / reST prose or code blocks."""
    found = []
    for m in _CODE_START.finditer(source):
        depth, end = 0, None
        for i in range(m.end() - 1, min(len(source), m.end() + 4000)):
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            if depth == 0:
                end = i + 1
                break
        if end is None:
            continue
        text = source[m.start():end]
        try:
            node = ast.parse(re.sub(r"\s+", " ", text), mode="eval").body
        except SyntaxError:
            continue
        if _is_config_call(node) and _literal(node):
            found.append((source.count("\n", 0, m.start()) + 1, text))
    return found


def collect(git_dir: str, rev: str) -> list[dict[str, object]]:
    paths = [p for p in _git(git_dir, "ls-tree", "-r", "--name-only", rev).splitlines()
             if p.startswith(ROOTS) and p.endswith((".py", ".md", ".rst"))]
    out = []
    for path in paths:
        source = _git(git_dir, "show", f"{rev}:{path}")
        found = _from_python(source) if path.endswith(".py") else _from_text(source)
        out += [{"path": path, "line": line, "text": text} for line, text in found]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir")
    parser.add_argument("--rev", default="HEAD")
    args = parser.parse_args()
    commit = _git(args.git_dir, "rev-parse", args.rev).strip()
    configs = collect(args.git_dir, commit)
    OUT.write_text(json.dumps({"repository": "pytorch/helion", "commit": commit,
                               "configs": configs}, indent=1) + "\n")
    print(f"{len(configs)} configs from {len({c['path'] for c in configs})} files -> {OUT}")


if __name__ == "__main__":
    main()
