import pytest

from tunegate.policy import Predicate, PredicateSyntaxError
from tunegate.policy.predicate import MISSING


def lookup(values):
    return lambda name: values.get(name, MISSING)


@pytest.mark.parametrize("text, values, holds", [
    ("num_warps < 4", {"num_warps": 2}, True),
    ("num_warps < 4", {"num_warps": 4}, False),
    ("indexing == 'tensor_descriptor'", {"indexing": "tensor_descriptor"}, True),
    ('indexing in ["pointer", "block_ptr"]', {"indexing": "pointer"}, True),
    ("indexing not in ['pointer']", {"indexing": "pointer"}, False),
    ("a > 1 and (b == true or c == none)", {"a": 2, "b": False, "c": None}, True),
    ("not a > 1", {"a": 2}, False),
    ("maxnreg == none", {"maxnreg": None}, True),
    ("maxnreg > 1", {"maxnreg": None}, False),  # unlike kinds never satisfy an ordering
    ("flag == 1", {"flag": True}, False),  # true is not 1
    ("missing > 1", {}, False),
    ("2.5 < x", {"x": 3}, True),
])
def test_evaluation(text, values, holds):
    assert Predicate(text).evaluate(lookup(values)).holds is holds


def test_any_element_semantics_report_loops():
    result = Predicate("range_num_stages > 1").evaluate(lookup({"range_num_stages": (1, 3, 2)}))
    assert result.holds and result.loops == {"range_num_stages": [1, 2]}
    assert not Predicate("range_num_stages > 3").evaluate(
        lookup({"range_num_stages": (1, 3)})).holds


@pytest.mark.parametrize("text, pos", [
    ("num_warps <", 11), ("num_warps << 2", 11), ("a in 3", 5), ("(a > 1", 6),
    ("__import__('os').system('x')", 16), ("a > 1 b", 6), ("", 0), ("a $ 1", 2),
])
def test_syntax_errors_point_at_the_text(text, pos):
    with pytest.raises(PredicateSyntaxError) as err:
        Predicate(text)
    assert err.value.pos == pos
    assert "^" in str(err.value)


def test_any_decomposable():
    assert Predicate("a > 1 or a == 0").is_any_decomposable()
    assert not Predicate("a > 1 and a < 3").is_any_decomposable()
    assert not Predicate("not a > 1").is_any_decomposable()
