"""Rules that verify themselves: the `reproducer` key, and `policy verify` running reproducers in
isolated workers under the interpreter (test-only reproducers of bugs wrong on every backend)."""

import json

import pytest

from tests.conftest import KERNELS, run_cli
from tunegate.autotune.reproducer import ReproducerError, load_reproducer
from tunegate.autotune.tuner import baseline_config
from tunegate.autotune.verify import EXIT_DIFFERS, VerifyError, exit_code, verify
from tunegate.policy import Policy, PolicyError, builtin_policy_path, detect_environment
from tunegate.policy import detect_traits
from tunegate.policy.binding import bind
from tunegate.policy.reproducers import builtin_reproducers
from tunegate.policy.verdict import match_rule, rule_state

SPLITK = KERNELS / "repro_splitk.py"
COPY = KERNELS / "repro_copy.py"
RACE = KERNELS / "repro_copy_race.py"
SPLITK_RACE = KERNELS / "repro_splitk_race.py"
H200 = {"triton": "3.6.0", "device": "cuda", "capability": "9.0"}


def rule(rule_id, reproducer, feature, extra=""):
    return f'''
[[rule]]
id = "{rule_id}"
title = "a test rule"
action = "disable"
features = ["{feature}"]
reason = "a test reason"
reproducer = "{reproducer}"
{extra}
'''


def here():
    return detect_environment(probe_device=True)


def test_an_unknown_reproducer_is_a_file_line_error(write_policy):
    path = write_policy("schema = 1\n" + rule("r-1", "no_such_bug", "split_k"))
    with pytest.raises(PolicyError) as e:
        Policy.from_files(path)
    problem = e.value.problems[0]
    assert problem.rule == "r-1" and problem.line == 9  # the reproducer's own line
    assert "unknown reproducer 'no_such_bug'" in str(e.value) and "store_load" in str(e.value)


def test_a_reproducer_file_is_found_relative_to_the_policy_and_must_be_a_string(
        write_policy, tmp_path):
    (tmp_path / "bugs").mkdir()
    (tmp_path / "bugs" / "mine.py").write_text(SPLITK.read_text())
    ok = write_policy("schema = 1\n" + rule("r-1", "bugs/mine.py", "split_k"))
    assert Policy.from_files(ok).rule("r-1").reproducer == "bugs/mine.py"
    bad = write_policy("schema = 1\n" + rule("r-1", "x", "split_k").replace(
        'reproducer = "x"', "reproducer = 3"), "bad.toml")
    with pytest.raises(PolicyError, match=r"bad.toml:9: rule 'r-1': reproducer: must be a "
                                          "string, got an integer 3"):
        Policy.from_files(bad)


def test_every_builtin_reproducer_shows_its_rule_on_an_h200_config():
    """Each built-in rule's reproducer: the rule applies to its kernel on an H200 with 3.6.0,
    covers some of its configs and not the baseline (so `verify` can compare the two)."""
    policy = Policy.from_files(builtin_policy_path())
    named = [r for r in policy.rules if r.reproducer]
    assert {r.reproducer for r in named} == set(builtin_reproducers())
    assert {r.id for r in named} >= {"pipelined-store-load", "flatten-empty-inner-range",
                                     "tensor-descriptor-deep-pipeline-misaligned",
                                     "dot-trans-with-sum-two-stages",
                                     "warp-specialize-before-blackwell"}
    env = here().with_overrides(H200)
    for r in named:
        rep, _ = load_reproducer(r)
        traits = detect_traits(rep.task.kernel)
        assert rule_state(r, env, traits).state == "active", r.id
        binding = bind(rep.task.space, traits)
        covered = [c for c in rep.task.space.configs()
                   if match_rule(r, c, rep.task.space, traits=traits, binding=binding)]
        assert covered, r.id
        assert baseline_config(rep.task.space, binding) not in covered, r.id


def test_a_bug_wrong_on_every_backend_is_still_present_with_evidence(write_policy):
    policy = Policy.from_files(write_policy("schema = 1\n" + rule("splitk", SPLITK, "split_k")))
    [check] = verify(policy, here())
    assert check.state == "present" and check.assumed == "present" and check.agrees
    assert check.baseline == "BLOCK_K=32, SPLIT_K=1"
    assert [o.config for o in check.outcomes] == ["BLOCK_K=32, SPLIT_K=2",
                                                 "BLOCK_K=32, SPLIT_K=4"]
    assert all(o.status == "wrong" and o.evidence["mismatched"] == 4 for o in check.outcomes)
    assert exit_code([check]) == 0


def test_a_fixed_bug_shows_the_until_to_write_and_writing_it_agrees(write_policy):
    env = here()
    path = write_policy("schema = 1\n" + rule("copy", COPY, "range_num_stages"))
    [check] = verify(Policy.from_files(path), env)
    assert check.state == "fixed" and check.assumed == "present" and not check.agrees
    assert check.until == f'[rule.until]\ntriton = ">={env.triton}"'
    assert len(check.outcomes) == 4 and {o.status for o in check.outcomes} == {"ok"}
    assert exit_code([check]) == EXIT_DIFFERS
    lifted = write_policy("schema = 1\n" + rule("copy", COPY, "range_num_stages", check.until))
    [again] = verify(Policy.from_files(lifted), env)
    assert again.state == "fixed" and again.assumed == "fixed" and exit_code([again]) == 0


def test_an_intermittent_bug_that_does_not_show_is_not_reproduced_and_not_called_fixed(
        write_policy):
    path = write_policy("schema = 1\n" + rule("race", RACE, "range_num_stages"))
    [check] = verify(Policy.from_files(path), here())
    assert check.state == "not_reproduced" and check.assumed == "present" and check.agrees
    assert check.until is None and "in 3 poisoned launches each" in check.why
    assert "proves no fix" in check.why
    assert all(o.status == "ok" and o.checked.startswith("stress-checked")
               for o in check.outcomes)
    assert exit_code([check]) == 0


def test_an_intermittent_bug_that_shows_is_still_present(write_policy):
    path = write_policy("schema = 1\n" + rule("splitk", SPLITK_RACE, "split_k"))
    [check] = verify(Policy.from_files(path), here())
    assert check.state == "present" and check.agrees and exit_code([check]) == 0
    assert {o.status for o in check.outcomes} == {"wrong"}


def test_a_lifted_rule_whose_bug_is_still_there_differs(write_policy):
    until = '[rule.until]\ntriton = ">=1.0"'
    policy = Policy.from_files(write_policy("schema = 1\n" + rule("splitk", SPLITK, "split_k",
                                                                  until)))
    [check] = verify(policy, here())
    assert check.state == "present" and check.assumed == "fixed"
    assert "lifted, until met" in check.why and exit_code([check]) == EXIT_DIFFERS


def test_what_cannot_be_tested_here_says_why(write_policy):
    extra = write_policy("schema = 1\n" + rule("splitk", SPLITK, "split_k",
                                               '[rule.when]\ndevice = "hip"'))
    policy = Policy.from_layers([("built-in", builtin_policy_path()), ("file", extra)])
    checks = {c.rule: c for c in verify(policy, here())}
    assert checks["splitk"].state == "not_testable"
    assert "device is cpu, rule wants hip" in checks["splitk"].why
    assert checks["pipelined-store-load"].state == "not_testable"  # a GPU-only bug
    assert "shows only on: gpu" in checks["pipelined-store-load"].why
    assert "rule wants cuda" in checks["dot-trans-with-sum-two-stages"].why
    [plain] = verify(policy, here(), ["block-ptr-removed"])
    assert plain.state == "not_testable" and "names no reproducer" in plain.why
    assert exit_code(checks.values()) == 0
    with pytest.raises(VerifyError, match="no rule 'nope'"):
        verify(policy, here(), ["nope"])


def test_the_cli_table_json_and_exit_codes(write_policy):
    path = write_policy("schema = 1\n" + rule("copy", COPY, "range_num_stages")
                        + rule("splitk", SPLITK, "split_k"))
    out = run_cli("policy", "verify", "--policy", str(path), "copy", "splitk")
    assert out.returncode == EXIT_DIFFERS, out.stderr
    assert "fixed here" in out.stdout and "still present" in out.stdout
    assert "[rule.until]" in out.stdout and "<< differs" in out.stdout
    out = run_cli("policy", "verify", "--policy", str(path), "splitk", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["exit"] == 0 and data["checks"][0]["state"] == "present"
    assert data["checks"][0]["agrees"] is True
    out = run_cli("policy", "verify", "no-such-rule")
    assert out.returncode == 2 and "no rule 'no-such-rule'" in out.stderr
    assert "Traceback" not in out.stderr


def test_verify_without_a_gpu_runs_the_reproducers_under_the_interpreter(write_policy):
    """As `tune` does, and the library's `verify` too: not 'not testable' for want of a GPU."""
    path = write_policy("schema = 1\n" + rule("splitk", SPLITK, "split_k"))
    out = run_cli("policy", "verify", "--policy", str(path), "splitk", "--json",
                  env={"TRITON_INTERPRET": None})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["checks"][0]["state"] == "present", out.stdout


def test_a_reproducer_file_without_a_reproducer_is_a_clean_error(write_policy, tmp_path):
    (tmp_path / "nothing.py").write_text("X = 1\n")
    path = write_policy("schema = 1\n" + rule("r-1", "nothing.py", "split_k"))
    with pytest.raises(ReproducerError, match=r"nothing.py defines no `REPRODUCER"):
        verify(Policy.from_files(path), here())
    out = run_cli("policy", "verify", "--policy", str(path), "r-1")
    assert out.returncode == 2 and "defines no `REPRODUCER" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_library_s_verify_exit_is_the_cli_s_exit_map_entry():
    from tunegate.cli._exit import EXIT_DIFFERS as CLI_DIFFERS

    assert EXIT_DIFFERS == CLI_DIFFERS == 3
