"""Text for terminals: what a policy file says is shown, never obeyed by the terminal."""

from tunegate import _render
from tunegate.cli import main


def test_escape_writes_control_and_format_characters_visibly():
    assert _render.escape("red \x1b[31mX\x1b[0m") == "red \\x1b[31mX\\x1b[0m"
    assert _render.escape("a\nb\tc\x00\x9b\u202e\u200b") == "a\\x0ab\\x09c\\x00\\x9b\\u202e\\u200b"
    assert _render.escape("a\n\x07b", keep_newlines=True) == "a\n\\x07b"
    assert _render.escape("café ™ 日本") == "café ™ 日本"


def test_table_escapes_every_cell_and_keeps_columns_aligned():
    text = _render.table(["rule", "title"], [("a\x1b[2J", "t\x1b]0;owned\x07"), ("bb", "x")])
    assert "\x1b" not in text and "\x07" not in text
    lines = text.splitlines()
    assert lines[2].index("t\\x1b") == lines[3].index("x")


def test_policy_list_does_not_pass_ansi_from_a_rule_title_to_the_terminal(isolated, capsys):
    (isolated / "policies.toml").write_text(
        'schema = 1\n[[rule]]\nid = "ansi"\ntitle = "\\u001b[2J\\u001b[31mharmless"\n'
        'action = "experimental"\nfeatures = ["range_flatten"]\nreason = "\\u001b]0;x\\u0007"\n')
    assert main(["policy", "list", "--no-probe"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J\\x1b[31mharmless" in out


def test_tune_summary_explain_hint_names_the_store_the_run_used():
    from tunegate.autotune.tuner import Trial, TuneResult

    result = TuneResult(task="t", problem="p", timing="interpreter", best={"B": 32},
                        best_time_ms=1.0, removals={}, space_size=2, trials=[
                            Trial(config={"B": 16}, status="wrong"),
                            Trial(config={"B": 32}, status="ok", time_ms=1.0)])
    text = _render.tuning_summary(result, "my kernels/k.py:TASK", "/tmp/a store.sqlite")
    hint = next(line for line in text.splitlines() if line.startswith("Explain one:"))
    assert hint.endswith("--kernel 'my kernels/k.py:TASK' --store '/tmp/a store.sqlite'")
    assert "--store" not in _render.tuning_summary(result, "k.py:TASK")
