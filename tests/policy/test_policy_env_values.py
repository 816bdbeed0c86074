"""`--env` overrides: every bad key or value is an InvalidEnvironment naming both."""

import pytest

from tunegate.cli import main
from tunegate.policy import ENV_FACTS, Environment, InvalidEnvironment

VERSION_FACTS = ("triton", "torch", "python", "cuda", "capability")
BAD_VERSIONS = [
    "three", "3..6", "3.6.", ".3", "v", "3.6-", "==3.6", ">=3", "3,6", "3 6", "3.6.0+",
    "1" * 5000, "9" * 4301 + ".0", "3." + "0" * 300 + "x", "-1", "3.6\x1b[31m", "3.6\n",
    "3.6\x00", "\t3.6", "3.6 ", "∞", "3.6.0+" + "a" * 300, "x" * 201,
]
BAD_DEVICES = ["tpu", "CUDA", "gpu", "cuda:0", "rocm", "mps", " cuda", "cuda\n", "\x1b[0m",
               "c" * 1000, "0", "cpu,cuda"]
BAD_GPUS = ["H200\x1b[31m", "H200\n", "\x00", "a" * 201, "H200\u202e", "\x9b31m", " H200"]
BAD_KEYS = ["trition", "TRITON", "", " ", "device ", "range_args", "overridden", "gpu\x1b",
            "k" * 5000]
EMPTY = ["", " ", "\t"]

CASES = (
    [(k, v) for k in VERSION_FACTS for v in BAD_VERSIONS[:14]]
    + [("capability", v) for v in BAD_VERSIONS[14:]] + [("triton", v) for v in BAD_VERSIONS[14:]]
    + [("device", v) for v in BAD_DEVICES] + [("gpu", v) for v in BAD_GPUS]
    + [(k, v) for k in ("triton", "device", "gpu") for v in EMPTY]
)


def test_there_are_at_least_94_adversarial_values():
    assert len(CASES) + len(BAD_KEYS) >= 94


@pytest.mark.parametrize("key, value", CASES)
def test_a_bad_value_names_the_fact_and_the_value(key, value):
    with pytest.raises(InvalidEnvironment) as err:
        Environment().with_overrides({key: value})
    message = str(err.value)
    assert f"environment fact {key} = " in message
    assert repr(value[:57])[1:-1][:20] in message  # the value, escaped, is shown
    assert not any(c in message for c in "\x1b\x00\n\x9b\u202e")


@pytest.mark.parametrize("key", BAD_KEYS)
def test_an_unknown_fact_is_named(key):
    with pytest.raises(InvalidEnvironment, match="unknown environment fact"):
        Environment().with_overrides({key: "3.6.0"})


@pytest.mark.parametrize("key, value", [
    ("triton", "3.7.0rc1"), ("triton", "3.6.0+git1a2b"), ("capability", "9.0"),
    ("capability", "10.3"), ("device", "hip"), ("gpu", "NVIDIA H200 NVL"), ("cuda", "12.8"),
    ("triton", "unknown"), ("device", "none"), ("gpu", "Radeon™ Pro"),
])
def test_good_values_are_taken(key, value):
    env = Environment().with_overrides({key: value})
    expected = None if value in ("unknown", "none") else value
    assert env.fact(key) == expected and key in env.overridden and key in ENV_FACTS


@pytest.mark.parametrize("pair", ["triton=", "device=tpu", "capability=sm90", "bogus=1",
                                  "triton=" + "9" * 5000])
def test_cli_reports_a_bad_env_in_one_line(pair, capsys):
    assert main(["policy", "explain", "num_warps=4", "--env", pair]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tunegate: error: ") and len(err.splitlines()) == 1
