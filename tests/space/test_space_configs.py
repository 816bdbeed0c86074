import json

import pytest

from tunegate.space import (Config, InvalidConfig, Parameter, PowerOfTwo, Space, helion_space,
                            helion_space_for, parse_config_text)

HELION_655 = ("helion.Config(block_sizes=[128], indexing='tensor_descriptor', num_stages=5, "
              "num_warps=1, pid_type='persistent_interleaved', range_flattens=[None, True], "
              "range_multi_buffers=[None, True], range_num_stages=[2, 3], "
              "range_unroll_factors=[1, 2])")


def test_the_helion_655_config_parses_in_every_form():
    values = parse_config_text(HELION_655)
    space = helion_space_for(values)
    config = space.complete(values)
    assert config["range_num_stages"] == (2, 3)
    assert config["indexing"] == "tensor_descriptor"
    kv = HELION_655.removeprefix("helion.Config(").removesuffix(")")
    assert space.complete(parse_config_text(kv)) == config
    assert space.complete(parse_config_text(json.dumps(values))) == config


def test_config_round_trips_through_json():
    space = helion_space(blocks=2, loops=2)
    config = space.default().replace(range_num_stages=[1, 3], indexing="block_ptr")
    again = Config.from_json(config.to_json())
    assert again == config and hash(again) == hash(config)
    assert space.validate_config(again) == config


def test_value_outside_its_domain_names_parameter_value_and_domain():
    space = Space(parameters={"BLOCK": Parameter(domain=PowerOfTwo(low=16, high=128))})
    with pytest.raises(InvalidConfig, match=r"parameter 'BLOCK': value 48 is not in power of two "
                                            r"in \[16, 128\]"):
        space.validate_config({"BLOCK": 48})
    with pytest.raises(InvalidConfig, match="unknown parameter 'BLOK'"):
        space.complete({"BLOK": 32})


def test_bad_config_text_is_reported_not_raised_as_syntax_error(caplog):
    # An unknown field is logged (kept as given), never an error: see test_helion_configs.
    helion_space_for(parse_config_text("blok_size=[64]"))
    assert "unknown Helion config field 'blok_size'" in caplog.text
    with pytest.raises(InvalidConfig, match="cannot parse config text"):
        parse_config_text("num_warps=4, num_stages=")
    with pytest.raises(InvalidConfig, match="not a literal value"):
        parse_config_text("num_warps=__import__('os').getpid()")


def test_bare_words_read_as_strings():
    assert parse_config_text("indexing=pointer, num_warps=4") == {"indexing": "pointer",
                                                                  "num_warps": 4}


def test_helion_schema_binds_features():
    space = helion_space(loops=1)
    assert space.bound_to("range_flatten") == ["range_flattens"]
    assert space.bound_to("tensor_descriptor") == ["indexing"]
    assert space.parameters["range_num_stages"].domain.loops == 1
