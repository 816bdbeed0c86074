"""Issue 18: problems point at the bad item's own line; damaged store rows never crash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tunegate.policy import PolicyError
from tunegate.policy.loader import load_file

_RULE = 'id = "{id}", title = "t", action = "{action}", reason = "r", features = ["range_flatten"]'


def _check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tunegate", "policy", "check", str(path)],
                          capture_output=True, text=True, timeout=120)


def test_multiline_array_blames_the_bad_item(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    path.write_text('schema = 1\n\n[[rule]]\nid = "x"\ntitle = "t"\naction = "disable"\n'
                    'reason = "r"\nfeatures = [\n  "range_flatten",\n  "no_such_feature",\n]\n')
    result = _check(path)
    assert result.returncode == 2
    assert f"{path}:10: rule 'x': features: unknown feature 'no_such_feature'" in result.stderr
    assert "Traceback" not in result.stderr


def test_inline_rule_array_blames_the_bad_rule(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    rules = [_RULE.format(id="a", action="disable"), _RULE.format(id="b", action="bogus")]
    path.write_text("schema = 1\nrule = [\n" + "".join(f"  {{{r}}},\n" for r in rules) + "]\n")
    with pytest.raises(PolicyError) as caught:
        load_file(path)
    assert f"{path}:4: rule 'b': action:" in str(caught.value)


def test_inline_bug_reference_blames_its_line(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    path.write_text('schema = 1\n[[rule]]\nid = "x"\ntitle = "t"\naction = "disable"\n'
                    'reason = "r"\nfeatures = ["range_flatten"]\nbugs = [\n  "a/b#1",\n'
                    '  "nope",\n]\n')
    with pytest.raises(PolicyError) as caught:
        load_file(path)
    assert f"{path}:10: rule 'x': bugs: bug reference 'nope'" in str(caught.value)
