"""Layering: built-in, project file found upward, $TUNEGATE_POLICY, --policy; replace by id."""

import json

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


def test_search_stops_at_the_project_root(isolated, monkeypatch):
    """A stray policies.toml above a pyproject.toml (or .git) is not the project's policy."""
    (isolated / "policies.toml").write_text(
        'schema = 1\n[[rule]]\nid = "pipelined-store-load"\nenabled = false\n')
    for marker in ("pyproject.toml", ".git", ".hg"):
        project = isolated / f"proj-{marker}"
        (project / "src").mkdir(parents=True)
        (project / marker).mkdir() if marker.startswith(".") else (
            project / marker).write_text('[project]\nname = "x"\n')
        monkeypatch.chdir(project / "src")
        policy = Policy.load()
        assert [name for name, _ in policy.layers] == ["built-in"], marker
        assert policy.rule("pipelined-store-load").enabled


def test_search_does_not_enter_folders_of_other_users(isolated, monkeypatch):
    """On a shared machine a policies.toml in someone else's folder (/tmp) is never read."""
    import os

    stray = isolated / "policies.toml"
    stray.write_text('schema = 1\n[[rule]]\nid = "pipelined-store-load"\nenabled = false\n')
    sub = isolated / "mine"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert Policy.load().layer_report().layers[-1].name == "project"  # same owner: found
    owner = os.stat(sub).st_uid
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)  # we are now someone else than
    assert [n for n, _ in Policy.load().layers] == ["built-in"]  # the stray file's owner


def test_layer_report_names_layers_and_what_higher_layers_weakened(isolated, monkeypatch):
    (isolated / "policies.toml").write_text(
        OVERRIDE.format(id="pipelined-store-load", reason="weaker")
        + '\n[[rule]]\nid = "experimental-range-flatten"\nenabled = false\n')
    env_file = isolated / "env.toml"
    env_file.write_text(OVERRIDE.format(id="pipelined-store-load", reason="reworded"))
    monkeypatch.setenv("TUNEGATE_POLICY", str(env_file))
    report = Policy.load().layer_report()
    assert [(x.name, x.rules, x.switch_offs) for x in report.layers] == [
        ("built-in", report.layers[0].rules, 0), ("project", 1, 1), ("TUNEGATE_POLICY", 1, 0)]
    changes = [(o.rule, o.change, o.layer, o.now) for o in report.overrides]
    assert changes == [
        ("pipelined-store-load", "weakened", "project", "experimental"),
        ("experimental-range-flatten", "switched off", "project", "off"),
        ("pipelined-store-load", "reworded", "TUNEGATE_POLICY", "experimental"),
    ]
    assert [o.rule for o in report.weakened] == ["pipelined-store-load",
                                                 "experimental-range-flatten"]
    assert report.overrides[0].source == f"{isolated / 'policies.toml'}:3"
    assert "built-in" in report.overrides[0].was and "disable" in report.overrides[0].was


def test_check_and_list_print_the_layers_and_the_weakened_rules(isolated, capsys):
    from tunegate.cli import main

    (isolated / "policies.toml").write_text(
        'schema = 1\n[[rule]]\nid = "pipelined-store-load"\nenabled = false\n')
    for args in (["policy", "check"], ["policy", "list", "--no-probe"]):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert "Policy layers (lowest first)" in out and "project" in out, out
        assert "pipelined-store-load  SWITCHED OFF" in out, out
    assert main(["policy", "list", "--no-probe", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["layers"]["overrides"][0]["change"] == "switched off"


def test_a_pyproject_that_cannot_say_which_policy_is_an_error(isolated):
    import pytest

    from tunegate.policy import PolicyError

    pyproject = isolated / "pyproject.toml"
    for text, line, needle in [
        ('[project\nname = "x"\n', 1, "invalid TOML"),
        ('[project]\nname = "x"\n\n[tool.tunegate]\npolicy = 5\n', 5, "must be a file name"),
        ('[tool]\ntunegate = "policies.toml"\n', 2, "must be a table"),
    ]:
        pyproject.write_text(text)
        with pytest.raises(PolicyError) as err:
            Policy.load()
        (p,) = err.value.problems
        assert p.file == str(pyproject) and p.line == line and needle in p.message, p
