"""The strict schema: exact TOML types (nothing coerced), true lines, limits, special files."""

import os
import sys

import pytest

from tests.conftest import policy_problems, run_cli
from tunegate.cli import main
from tunegate.policy import Environment, Policy, PolicyError
from tunegate.space import helion_space

RULE = '''schema = 1

[[rule]]
id = "my-rule"
title = "t"
action = "disable"
features = ["range_flatten"]
reason = "r"
'''


problems = policy_problems


def with_key(line: str) -> str:
    """RULE with `line` added as line 9, inside the [[rule]]."""
    return RULE + line + "\n"


@pytest.mark.parametrize("text, line, needle", [
    (with_key('match = ["num_warps == 999"]'), 9, "match: must be a string, got an array"),
    (with_key("match = false"), 9, "match: must be a string, got a boolean false"),
    (with_key('enabled = "no"'), 9, "enabled: must be true or false, got a string 'no'"),
    (with_key('enabled = "off"'), 9, "enabled: must be true or false"),
    (with_key("enabled = 0"), 9, "enabled: must be true or false, got an integer 0"),
    (RULE.replace("schema = 1", "schema = true"), 1, "got a boolean true"),
    (RULE.replace("schema = 1", "schema = 1.0"), 1, "got a float 1.0"),
    (RULE.replace("schema = 1", 'schema = "1"'), 1, "got a string '1'"),
    (RULE.replace('id = "my-rule"', "id = 5"), 4, "id: must be a string, got an integer 5"),
    (RULE.replace('title = "t"', "title = 1.5"), 5, "title: must be a string"),
    (RULE.replace('"range_flatten"]', '"range_flatten", 3]'), 7, "features.1: must be a string"),
    (with_key('bugs = "triton-lang/triton#1"'), 9, "bugs: must be an array of strings"),
    (with_key("[rule.when]\nkernel = 5"), 10, "when.kernel: must be an array of strings"),
    (with_key('[rule.when]\nkernel = [["dot"]]'), 10, "when.kernel.0: must be a string"),
    (with_key('[rule.when]\nkernel = "dot"'), 10, "when.kernel: must be an array of strings"),
    (with_key("[rule.when]\ntriton = 3.6"), 10, "when.triton: must be a string, got a float"),
    (with_key("[rule.when]\ndevice = true"), 10, "when.device: must be a string"),
    (with_key('when = "always"'), 9, "when: must be a table"),
    (with_key('[rule.until]\ncolour = "x"'), 10, "until.colour: unknown key"),
    (with_key('[rule.when]\ntriton = "==1!3.*"'), 10, "epoch"),
    (with_key('[rule.when]\ntriton = ">=3.0.*"'), 10, "invalid version specifier"),
    (with_key('[rule.when]\ncapability = "~=9"'), 10, "invalid version specifier"),
    (with_key('[rule.when]\ntriton = "==' + "9" * 5000 + '"'), 10, "too long"),
    (RULE.replace('id = "my-rule"', 'id = "my-rule\\n"'), 4, "kebab-case"),
])
def test_wrong_types_are_named_with_their_true_line(write_policy, text, line, needle):
    found = problems(write_policy(text))
    assert any(p.line == line and needle in p.message for p in found), found


def test_every_problem_of_a_file_at_once(write_policy):
    text = RULE.replace("schema = 1", "schema = true").replace('title = "t"', "title = 1")
    text += 'enabled = "off"\n[rule.when]\nkernel = [1]\ntriton = "==1!3.*"\n\n[meta]\nx = 1\n'
    lines = sorted(p.line for p in problems(write_policy(text)))
    assert lines == [1, 5, 9, 11, 12, 14], lines


@pytest.mark.parametrize("text, line, needle", [
    ('schema = 1\n\n[meta]\nowner = "me"\n', 3, "unknown top-level key 'meta'"),
    ('schema = 1\nrule = [1, 2]\n', 2, "[[rule]] tables"),
    ('schema = 1\n[rule]\nid = "x"\n', 2, "[[rule]] tables"),
    ('schema = 1\nrule = [{id = "x", title = "t"}]\n', 2, "action: required key is missing"),
])
def test_top_level_problems_have_lines(write_policy, text, line, needle):
    found = problems(write_policy(text))
    assert any(p.line == line and needle in p.message for p in found), found


def test_a_rule_header_inside_a_string_does_not_shift_the_blame(write_policy):
    text = RULE.replace('title = "t"', 'title = """\n[[rule]]\nid = "x"\n"""').replace(
        'action = "disable"', 'action = "forbid"')
    (p,) = problems(write_policy(text))
    assert p.line == 9 and p.rule == "my-rule" and "action" in p.message
    literal = RULE.replace('reason = "r"', "reason = '''\n[[rule]]\n'''\ncolour = 1")
    (p,) = problems(write_policy(literal))
    assert p.line == 11 and "colour: unknown key" in p.message


@pytest.mark.parametrize("text, needle", [
    ('schema = 1\n[[rule]]\nenabled = false\n', "needs the `id`"),
    ('schema = 1\n[[rule]]\nid = ["pipelined-store-load"]\nenabled = false\n',
     "id: must be a string"),
    ('schema = 1\n[[rule]]\nid = "Not_Kebab"\nenabled = false\n', "kebab-case"),
    ('schema = 1\n[[rule]]\nid = "no-such-rule"\nenabled = false\n', "no lower layer defines"),
])
def test_bad_switch_offs_fail_check_and_every_command_alike(isolated, capsys, text, needle):
    path = isolated / "policies.toml"
    path.write_text(text)
    with pytest.raises(PolicyError, match="needs the|must be a string|kebab|no lower"):
        Policy.load()
    for args in (["policy", "check", str(path)], ["policy", "check"], ["policy", "list"],
                 ["policy", "explain", "num_warps=4"], ["space", "show"]):
        assert main([*args, "--no-probe"] if args[1] != "check" else args) == 2
        err = capsys.readouterr().err
        assert needle in err and (f"{path}:3" in err or f"{path}:2" in err), (args, err)


def test_check_validates_a_switch_off_against_the_layers_below(isolated, write_policy, capsys):
    ok = write_policy('schema = 1\n[[rule]]\nid = "pipelined-store-load"\nenabled = false\n',
                      "off.toml")
    assert main(["policy", "check", str(ok)]) == 0
    assert "0 rule(s), 1 switch-off(s)" in capsys.readouterr().out


@pytest.mark.parametrize("text, line, needle", [
    (RULE + "x = " + "[" * 1000 + "]" * 1000 + "\n", 9, "nested more than"),
    (RULE + "x = " + "{a=" * 400 + "1" + "}" * 400 + "\n", 9, "nested more than"),
    (RULE + "x = " + "9" * 5000 + "\n", 9, "more than 100 digits"),
    (with_key('match = "' + "(" * 300 + "num_warps > 1" + ")" * 300 + '"'), 9, "nested more"),
    (with_key('match = "' + "not " * 100 + 'num_warps > 1"'), 9, "nested more"),
    (with_key('match = "' + "not " * 10000 + 'num_warps > 1"'), 9, "characters long"),
    (with_key('match = "num_warps in ' + "[" * 100 + "]" * 100 + '"'), 9, "nested more"),
    (with_key('match = "num_warps > ' + "9" * 100 + '"'), 9, "more than 30 digits"),
    (with_key('match = "num_warps > ' + "9" * 5000 + '"'), 9, "too long"),
    (with_key('match = "num_warps > 1.0e99999"'), 9, "too large"),
])
def test_depth_and_size_limits_are_clean_problems(write_policy, text, line, needle):
    found = problems(write_policy(text))
    assert any(p.line == line and needle in p.message for p in found), found


def test_a_byte_that_is_not_utf8_is_a_problem_with_its_place(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_bytes(RULE.encode() + b'reason2 = "caf\xe9"\n')
    (p,) = problems(path)
    assert (p.line, p.column) == (9, 15) and "not UTF-8" in p.message


def test_a_big_file_is_refused(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text(RULE + "# " + "x" * (256 * 1024) + "\n")
    (p,) = problems(path)
    assert "larger than" in p.message


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "/dev/stdin", "folder", "fifo"])
def test_special_files_are_refused_without_blocking(tmp_path, special):
    if special == "folder":
        special = str(tmp_path)
    elif special == "fifo":
        special = str(tmp_path / "fifo")
        os.mkfifo(special)
    (p,) = problems(special)
    assert "not a regular file" in p.message and p.file == special


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
def test_cli_refuses_a_fifo_policy_and_a_pyproject_naming_stdin(isolated):
    fifo = isolated / "fifo"
    os.mkfifo(fifo)
    result = run_cli("policy", "list", "--no-probe", cwd=isolated,
                     env={"TUNEGATE_POLICY": str(fifo)})
    assert result.returncode == 2 and "not a regular file" in result.stderr
    (isolated / "pyproject.toml").write_text('[tool.tunegate]\npolicy = "/dev/stdin"\n')
    result = run_cli("policy", "check", cwd=isolated)
    assert result.returncode == 2 and "/dev/stdin: not a regular file" in result.stderr


def test_a_strictly_typed_file_still_gates_as_written(write_policy):
    path = write_policy(RULE.replace('features = ["range_flatten"]',
                                     'match = "num_warps >= 8"\nenabled = true'))
    policy = Policy.from_files(path)
    region = policy.gate(helion_space(), Environment())
    assert 8 not in region.allowed["num_warps"] and 4 in region.allowed["num_warps"]


@pytest.mark.parametrize("opening", ['"""', "'''", '"'])
def test_an_unterminated_string_is_reported_at_once(write_policy, opening):
    """The blame scan must not backtrack without end over a string that never closes."""
    import time

    start = time.monotonic()
    found = problems(write_policy(with_key(f"title2 = {opening}" + "x y" * 50_000)))
    assert time.monotonic() - start < 5 and "invalid TOML" in found[0].message
