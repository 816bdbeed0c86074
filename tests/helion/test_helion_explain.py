"""`policy explain` without `--kernel` reads a Helion config; a Triton config is refused with the
reason, never given a verdict that `--kernel` would contradict."""

from tests.conftest import run_cli

H200 = ["--env", "triton=3.6.0", "--env", "device=cuda", "--env", "capability=9.0"]
TRITON = "BLOCK=64, INNER_STAGES=2, UNROLL=1, FLATTEN=False, num_warps=4"


def test_a_triton_config_without_its_kernel_is_refused_with_the_reason():
    result = run_cli("policy", "explain", TRITON, *H200)
    assert result.returncode == 2, result.stdout
    assert "'BLOCK', 'INNER_STAGES', 'UNROLL', 'FLATTEN' are a Triton constexpr" in result.stderr
    assert "--kernel FILE:NAME" in result.stderr and "Traceback" not in result.stderr
    assert "ALLOWED" not in result.stdout


def test_with_its_kernel_the_same_triton_config_gets_its_verdict(tmp_path):
    result = run_cli("policy", "explain", TRITON, "--kernel", "examples/store_load.py:TASK",
                     *H200, "--store", str(tmp_path / "s.sqlite"))
    assert result.returncode == 0, result.stderr
    assert "verdict  EXCLUDED" in result.stdout


def test_a_helion_config_still_reads_without_a_kernel_and_json_stays_clean():
    result = run_cli("policy", "explain", "block_sizes=[64], atomic_indexing='tensor_descriptor', "
                     "my_tunable=3", "--env", "device=cuda", "--env", "capability=8.0",
                     "--env", "triton=3.6.0", "--json")
    assert result.returncode == 0, result.stderr
    import json

    data = json.loads(result.stdout)  # the unknown field's warning is not in stdout
    assert data["verdict"]["status"] == "excluded"
    assert "tensor-descriptor-needs-sm90" in {m["rule"] for m in data["verdict"]["matched"]}


def test_space_show_sizes_a_space_from_a_large_or_odd_written_block():
    for config, domain in (("block_sizes=[8192]", "power of two in [1, 16777216]"),
                           ("block_sizes=[3, 64]", "2 × (integer in [1, 64])")):
        result = run_cli("space", "show", "--config", config)
        assert result.returncode == 0, result.stderr
        assert domain in result.stdout


def test_a_helion_kernel_named_by_kernel_keeps_its_config_a_helion_config(tmp_path):
    """A `@helion.kernel` given by --kernel is not a plain Triton kernel: its config is read as
    Helion's, features and all (read as Triton's, `indexing` lost its feature)."""
    import json

    import pytest

    pytest.importorskip("helion")
    (tmp_path / "hk.py").write_text(
        "import torch\nimport helion\nimport helion.language as hl\n\n"
        "@helion.kernel()\ndef add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:\n"
        "    out = torch.empty_like(x)\n    for tile in hl.tile(out.size()):\n"
        "        out[tile] = x[tile] + y[tile]\n    return out\n")
    result = run_cli("policy", "explain", "block_sizes=[64], indexing='tensor_descriptor'",
                     "--kernel", f"{tmp_path / 'hk.py'}:add", "--env", "device=cuda",
                     "--env", "capability=8.0", "--env", "triton=3.6.0", "--json")
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)["verdict"]
    assert "tensor_descriptor" in verdict["features_used"]
    assert "tensor-descriptor-needs-sm90" in {m["rule"] for m in verdict["matched"]}
