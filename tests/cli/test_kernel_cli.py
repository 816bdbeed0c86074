"""`space show --kernel`, `policy explain --kernel` and `policy list` on the seed kernel."""

import json

from tests.conftest import run_cli

H200 = ["--env", "triton=3.6.0", "--env", "device=cuda", "--env", "capability=9.0"]
SEED = "tests/kernels/seed_task.py:TASK"


def test_space_show_prints_the_loop_map_and_bindings():
    result = run_cli("space", "show", "--kernel", SEED, *H200)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "seed_store_load — traits: in_place, nested_dynamic_range, store_then_load" in out
    assert "num_stages=INNER_STAGES, loop_unroll_factor=UNROLL, flatten=FLATTEN" in out
    assert "INNER_STAGES  range_num_stages  1 (line" in out
    assert "72 configs; 24 left" in out and "pipelined-store-load  48" in out
    data = json.loads(run_cli("space", "show", "--kernel", SEED, *H200, "--json").stdout)
    loops = data["kernel"]["loops"]
    assert [loop["parent"] for loop in loops] == [None, 0]
    assert loops[1]["options"]["num_stages"]["parameters"] == ["INNER_STAGES"]
    assert data["kernel"]["loop_traits"]["store_then_load"] == [1]


def test_explain_names_rule_bugs_parameter_loop_and_line():
    result = run_cli("policy", "explain", "OUTER_STAGES=2, INNER_STAGES=2, UNROLL=1, "
                     "FLATTEN=False, num_warps=4", "--kernel", SEED, *H200, "--json")
    assert result.returncode == 0, result.stderr
    (reason,) = json.loads(result.stdout)["reasons"]
    assert reason["rule"] == "pipelined-store-load" and "triton-lang/triton#8259" in reason["bugs"]
    (site,) = reason["evidence"]["sites"]
    assert (site["parameter"], site["value"], site["loop"]) == ("INNER_STAGES", 2, 1)


def test_policy_list_shows_bug_ids():
    out = run_cli("policy", "list", *H200).stdout
    row = next(line for line in out.splitlines() if line.startswith("pipelined-store-load"))
    assert "triton-lang/triton#8259, pytorch/helion#655" in row


def test_a_plain_jit_kernel_is_explained_in_its_config_s_own_space():
    """`--kernel FILE:NAME` naming a plain `@triton.jit` kernel (no Task, no config list): the
    config text is read against its kernel, not refused as a Helion config."""
    kernel = "tests/kernels/loop_kernels.py:seed_store_load"
    config = "BLOCK=64, OUTER_STAGES=1, INNER_STAGES=3, UNROLL=1, FLATTEN=False, num_warps=4"
    result = run_cli("policy", "explain", "--kernel", kernel, config, *H200, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["verdict"]["status"] == "excluded"
    assert "pipelined-store-load" in [m["rule"] for m in data["verdict"]["matched"]]
    shown = run_cli("space", "show", "--kernel", kernel, *H200)
    assert shown.returncode == 2 and "lists no configs" in shown.stderr
    shown = run_cli("space", "show", "--kernel", kernel, "--config", config, *H200)
    assert shown.returncode == 0 and "INNER_STAGES" in shown.stdout, shown.stderr
