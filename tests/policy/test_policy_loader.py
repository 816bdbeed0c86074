"""Broken policy files: every problem reported, with file, line and rule id; nothing applied."""

import pytest

from tests.conftest import policy_problems, run_cli
from tunegate.policy import Policy, PolicyError, load_file

GOOD_RULE = '''
schema = 1

[[rule]]
id = "old-triton"
title = "t"
action = "disable"
features = ["range_flatten"]
reason = "r"
'''


problems = policy_problems


def test_a_good_file_loads_and_remembers_file_and_line(write_policy):
    path = write_policy(GOOD_RULE)
    (rule,) = load_file(path)
    assert rule.id == "old-triton" and rule.source.line == 3 and rule.source.file == str(path)


def test_toml_syntax_error_has_line_and_column(write_policy):
    path = write_policy('schema = 1\n[[rule]]\nid = "x\n')
    (p,) = problems(path)
    assert p.line == 3 and p.column is not None and "invalid TOML" in p.message


@pytest.mark.parametrize("edit, line, needle", [
    (('features = ["range_flatten"]', 'features = ["range_flaten"]'), 7, "unknown feature"),
    (('action = "disable"', 'action = "forbid"'), 6, "action"),
    (('reason = "r"', 'reason = "r"\nmatch = "num_warps <"'), 9, "expected a name"),
    (('reason = "r"', 'reason = "r"\nmatch = "nmu_warps < 4"'), 9, "unknown name 'nmu_warps'"),
    (('reason = "r"', 'reason = "r"\ncolour = "red"'), 9, "unknown key"),
    (('reason = "r"', 'reason = "r"\n[rule.when]\ntriton = "<<3.7"'), 10,
     "invalid version specifier"),
    (('reason = "r"', 'reason = "r"\n[rule.when]\nkernel = ["stores"]'), 10,
     "unknown kernel trait"),
    (('id = "old-triton"', 'id = "Old_Triton"'), 4, "kebab-case"),
    (('title = "t"\n', ''), 3, "title: required key is missing"),
])
def test_each_mistake_names_line_and_rule(write_policy, edit, line, needle):
    path = write_policy(GOOD_RULE.replace(*edit))
    found = problems(path)
    assert any(p.line == line and needle in p.message for p in found), found
    assert all(str(path) in str(p) for p in found)


def test_duplicate_ids_and_all_problems_at_once(write_policy):
    text = GOOD_RULE + GOOD_RULE.replace("schema = 1", "").replace(
        'features = ["range_flatten"]', 'features = ["nope"]') + GOOD_RULE.replace(
        "schema = 1", "")
    found = problems(write_policy(text))
    messages = [str(p) for p in found]
    assert any("unknown feature 'nope'" in m and "rule 'old-triton'" in m for m in messages)
    assert any("duplicate rule id" in m for m in messages)


def test_missing_schema_is_an_error(write_policy):
    (p,) = problems(write_policy(GOOD_RULE.replace("schema = 1", "")))
    assert "schema = 1" in p.message


@pytest.mark.parametrize("broken", [
    'schema = 1\n[[rule]\n',
    GOOD_RULE.replace('"range_flatten"', '"bogus"'),
    GOOD_RULE + GOOD_RULE.replace("schema = 1", ""),
    GOOD_RULE + '\n[rule.when]\ntriton = "=>3.7"\n',
    GOOD_RULE.replace('reason = "r"', 'reason = "r"\nmatch = "num_warps <= "'),
])
def test_policy_check_exits_2_with_file_line_and_no_traceback(write_policy, broken):
    path = write_policy(broken)
    result = run_cli("policy", "check", str(path))
    assert result.returncode == 2, result.stderr
    assert f"{path}:" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    if "[[rule]\n" not in broken:
        assert "rule 'old-triton'" in result.stderr


def test_policy_check_of_good_files(write_policy):
    result = run_cli("policy", "check", str(write_policy(GOOD_RULE)))
    assert result.returncode == 0 and "ok, 1 rule(s)" in result.stdout
    result = run_cli("policy", "check")
    assert result.returncode == 0 and "effective rule(s)" in result.stdout


def test_a_broken_layer_stops_everything(write_policy, isolated):
    bad = write_policy(GOOD_RULE.replace('"range_flatten"', '"bogus"'), "bad.toml")
    with pytest.raises(PolicyError):
        Policy.load(extra=[str(bad)])
