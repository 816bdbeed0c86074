"""The `tunegate policy` and `space` verbs as a user runs them (a fresh process each)."""

import json

from tests.conftest import run_cli
from tests.space.test_space_configs import HELION_655

H200 = ["--env", "triton=3.6.0", "--env", "device=cuda", "--env", "capability=9.0"]


def test_explain_the_helion_655_config():
    result = run_cli("policy", "explain", HELION_655, *H200)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "verdict  EXCLUDED" in out
    assert "helion-tensor-descriptor-pipelining" in out and "pytorch/helion#755" in out
    assert "tensor-descriptor-deep-pipeline-misaligned" in out
    assert "triton-lang/triton#10474" in out
    assert "Experimental" in out and "range_flatten (loop 1)" in out
    assert "experimental-range-multi-buffer" in out
    assert "pipelined-store-load" in out and "kernel traits (no kernel given)" in out


def test_explain_json_shape_and_fail_on():
    result = run_cli("policy", "explain", HELION_655, *H200, "--json", "--fail-on", "excluded")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    verdict = data["verdict"]
    assert verdict["status"] == "excluded"
    assert {m["rule"] for m in verdict["matched"]} >= {"helion-tensor-descriptor-pipelining"}
    assert verdict["experimental_features"] == ["range_flatten", "range_multi_buffer"]
    assert data["environment"]["triton"] == "3.6.0" and data["policy"]["fingerprint"]
    ok = run_cli("policy", "explain", "num_warps=4", *H200, "--fail-on", "experimental")
    assert ok.returncode == 0 and "verdict  ALLOWED" in ok.stdout


def test_an_unusable_store_is_a_clean_error():
    result = run_cli("policy", "explain", "BLOCK=64, INNER_STAGES=2, UNROLL=1, FLATTEN=False, "
                     "num_warps=4", "--kernel", "examples/store_load.py:TASK", *H200,
                     "--store", "/dev/null/none.sqlite")
    assert result.returncode == 2
    assert "cannot open the tuning store" in result.stderr and "Traceback" not in result.stderr


def test_explain_with_a_kernel_excludes_the_pipelined_config(tmp_path):
    result = run_cli("policy", "explain", "BLOCK=64, INNER_STAGES=2, UNROLL=1, FLATTEN=False, "
                     "num_warps=4", "--kernel", "examples/store_load.py:TASK", *H200,
                     "--store", str(tmp_path / "s.sqlite"))
    assert result.returncode == 0, result.stderr
    assert "verdict  EXCLUDED" in result.stdout and "triton-lang/triton#8259" in result.stdout
    assert "no trials of this config are recorded" in result.stdout


def test_a_policy_file_gates_by_version(tmp_path):
    policy = tmp_path / "p.toml"
    policy.write_text('schema = 1\n[[rule]]\nid = "no-old-unroll"\ntitle = "t"\n'
                      'action = "disable"\nfeatures = ["range_unroll"]\nreason = "r"\n'
                      '[rule.when]\ntriton = "<3.7"\n')
    config = "range_unroll_factors=[2]"
    for version, status in (("3.6.0", "EXCLUDED"), ("3.7.0rc1", "EXCLUDED"),
                            ("3.7.0", "ALLOWED")):
        r = run_cli("policy", "explain", config, "--policy", str(policy),
                    "--env", f"triton={version}", "--env", "device=cpu")
        assert f"verdict  {status}" in r.stdout, (version, r.stdout, r.stderr)


def test_bad_inputs_exit_2_without_traceback():
    for args in (["policy", "explain", "num_warps=3"],
                 ["policy", "explain", "num_warps=4", "--env", "trition=3.6"],
                 ["policy", "explain", "num_warps=4", "--env", "triton"],
                 ["policy", "explain", "num_warps=[[]"],
                 ["policy", "explain", "num_warps=4", "--kernel", "nope.py:k"]):
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.startswith("tunegate: error:") and "Traceback" not in r.stderr


def test_list_env_and_space_show():
    listing = run_cli("policy", "list", *H200)
    assert listing.returncode == 0 and "pipelined-store-load" in listing.stdout
    assert "possible" in listing.stdout and "inactive" in listing.stdout
    env = json.loads(run_cli("policy", "env", *H200, "--json").stdout)
    assert env["capability"] == "9.0" and "capability" in env["overridden"]
    show = run_cli("space", "show", "--kernel", "examples/store_load.py:TASK", *H200, "--json")
    data = json.loads(show.stdout)
    stages = next(p for p in data["parameters"] if p["name"] == "INNER_STAGES")
    assert stages["excluded_values"] == [2, 3]
    assert {"rule": "pipelined-store-load", "removes": 72, "exact": True,
            "assumed": False} in data["removals"]
    human = run_cli("space", "show", "--loops", "2", *H200)
    assert human.returncode == 0 and "range_num_stages" in human.stdout


def test_space_show_of_a_parameter_with_a_large_domain_is_quick(tmp_path):
    """Excluded values were found by a list lookup per value: quadratic, an hour at 10^6."""
    path = tmp_path / "wide.py"
    path.write_text(
        "import triton\nimport triton.language as tl\n"
        "from tunegate.autotune import Task\n"
        "from tunegate.space import IntRange, Parameter, Space\n\n"
        "@triton.jit\ndef k(x_ptr, OFFSET: tl.constexpr):\n"
        "    tl.store(x_ptr + OFFSET, 1.0)\n\n"
        "TASK = Task(name='k', kernel=k, grid=(1,), outputs=('x_ptr',),\n"
        "            space=Space(parameters={'OFFSET': Parameter(domain=IntRange(low=0, "
        "high=200000))}),\n"
        "            make_inputs=lambda seed, device: {})\n")
    show = run_cli("space", "show", "--no-probe", "--kernel", f"{path}:TASK", "--json")
    assert show.returncode == 0, show.stderr
    [offset] = json.loads(show.stdout)["parameters"]
    assert offset["domain"] == "integer in [0, 200000]" and offset["excluded_values"] == []
