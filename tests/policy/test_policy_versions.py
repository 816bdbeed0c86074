import pytest

from tunegate.policy import InvalidGate, VersionGate


@pytest.mark.parametrize("spec, version, inside", [
    ("<3.7", "3.7.0rc1", True),
    ("<3.7", "3.7.0.dev0", True),
    ("<3.7", "3.7.0", False),
    (">=3.7", "3.7.0rc1", False),
    (">=3.7", "3.7.0", True),
    ("==3.6.0", "3.6.0+git1a2b", True),
    ("<3.7", "3.6.0+git1a2b", True),
    (">=3.6.0,<3.9.0", "3.8.0", True),
    (">=3.6.0,<3.9.0", "3.9.0", False),
    ("==3.6.*", "3.6.2", True),
    ("!=3.6.*", "3.6.2", False),
    ("~=3.6", "3.9.1", True),
    ("~=3.6.1", "3.7.0", False),
    (">2.10", "2.11.0+cu130", True),
])
def test_gates_are_about_order(spec, version, inside):
    assert (version in VersionGate(spec)) is inside


@pytest.mark.parametrize("bad", ["<<3.7", "3.7", "", ">=x.y"])
def test_bad_specifiers_are_errors(bad):
    with pytest.raises(InvalidGate):
        VersionGate(bad)
