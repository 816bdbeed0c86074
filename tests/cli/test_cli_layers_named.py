"""`tune` and `explain` name the policy layers that applied and every rule a layer weakened, so
a stray policies.toml cannot switch a rule off unseen."""

import json

from tunegate.cli import main

SWITCH_OFF = """schema = 1

[[rule]]
id = "pipelined-store-load"
enabled = false
"""


def test_tune_names_the_layers_and_the_rule_switched_off(tmp_path, capsys):
    extra = tmp_path / "stray.toml"
    extra.write_text(SWITCH_OFF)
    store = str(tmp_path / "s.sqlite")
    args = ["tune", "tests/kernels/pipelined_copy.py:TASK", "--store", store, "--budget", "2",
            "--policy", str(extra)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "policy layers: built-in" in text and str(extra) in text
    assert "pipelined-store-load: switched off by" in text
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    layers = data["policy_layers"]
    assert [layer["file"] for layer in layers["layers"]][-1] == str(extra)
    assert [o["rule"] for o in layers["overrides"]] == ["pipelined-store-load"]


def test_explain_names_the_layers(tmp_path, capsys):
    extra = tmp_path / "stray.toml"
    extra.write_text(SWITCH_OFF)
    assert main(["policy", "explain", "num_warps=4", "--env", "device=cpu",
                 "--policy", str(extra)]) == 0
    text = capsys.readouterr().out
    assert "policy layers: built-in" in text and "pipelined-store-load: switched off" in text
