"""Layering: built-in, project file found upward, $TUNEGATE_POLICY, --policy; replace by id."""

from tunegate.policy import Policy, builtin_policy_path

OVERRIDE = '''schema = 1

[[rule]]
id = "{id}"
title = "replaced"
action = "experimental"
features = ["range_flatten"]
reason = "{reason}"
'''


def test_builtin_only(isolated):
    policy = Policy.load()
    assert [name for name, _ in policy.layers] == ["built-in"]
    assert policy.rule("pipelined-store-load").source.file == str(builtin_policy_path())


def test_project_file_is_found_from_a_subfolder(isolated, monkeypatch):
    (isolated / "policies.toml").write_text(OVERRIDE.format(id="pipelined-store-load",
                                                            reason="project"))
    sub = isolated / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    policy = Policy.load()
    rule = policy.rule("pipelined-store-load")
    assert rule.reason == "project" and rule.source.layer == "project" and rule.source.line == 3


def test_pyproject_names_the_policy_file(isolated):
    (isolated / "pyproject.toml").write_text('[tool.tunegate]\npolicy = "tg.toml"\n')
    (isolated / "tg.toml").write_text(OVERRIDE.format(id="my-rule", reason="pyproject"))
    assert Policy.load().rule("my-rule").reason == "pyproject"


def test_env_variable_and_explicit_files_are_higher(isolated, monkeypatch):
    (isolated / "policies.toml").write_text(OVERRIDE.format(id="my-rule", reason="project"))
    env_file = isolated / "env.toml"
    env_file.write_text(OVERRIDE.format(id="my-rule", reason="env"))
    cli_file = isolated / "cli.toml"
    cli_file.write_text(OVERRIDE.format(id="my-rule", reason="cli"))
    monkeypatch.setenv("TUNEGATE_POLICY", str(env_file))
    assert Policy.load().rule("my-rule").reason == "env"
    assert Policy.load(extra=[str(cli_file)]).rule("my-rule").reason == "cli"


def test_enabled_false_switches_a_rule_off(isolated):
    (isolated / "policies.toml").write_text(
        'schema = 1\n\n[[rule]]\nid = "experimental-range-flatten"\nenabled = false\n')
    policy = Policy.load()
    rule = policy.rule("experimental-range-flatten")
    assert not rule.enabled and rule.source.layer == "project"
    assert policy.fingerprint() != Policy.load(cwd="/").fingerprint()


def test_switching_off_an_unknown_rule_is_an_error(isolated):
    import pytest

    from tunegate.policy import PolicyError

    (isolated / "policies.toml").write_text('schema = 1\n[[rule]]\nid = "no-such"\nenabled = false\n')
    with pytest.raises(PolicyError, match="no lower layer defines"):
        Policy.load()


def test_fingerprint_is_stable_and_tracks_edits(isolated):
    assert Policy.load().fingerprint() == Policy.load().fingerprint()
    (isolated / "policies.toml").write_text(OVERRIDE.format(id="my-rule", reason="x"))
    first = Policy.load().fingerprint()
    (isolated / "policies.toml").write_text(OVERRIDE.format(id="my-rule", reason="y"))
    assert Policy.load().fingerprint() != first
