"""What may be tuned here: rules, environment, kernel traits, verdicts and regions.

Importing this package imports neither torch nor triton; each name is imported on first use.
"""

import importlib
from typing import Any

__all__ = [
    "ENV_FACTS", "TRAITS", "AppliedLayer", "Conditions", "EmptyRegion", "Environment",
    "Inactive", "InvalidEnvironment", "InvalidGate", "KernelTraits", "LayerReport", "Override",
    "Policy", "PolicyError", "Possible", "Predicate", "PredicateSyntaxError", "Problem", "Region",
    "Removal", "Rule", "RuleMatch", "RuleSource", "RuleState", "SwitchOff", "TraitError",
    "Verdict", "VersionGate", "builtin_policy_path", "detect_environment", "detect_traits",
    "discover_layers", "load_file", "rule_state",
]

_SOURCES = {
    **dict.fromkeys(("ENV_FACTS", "Environment", "InvalidEnvironment", "detect_environment"),
                    ".env"),
    **dict.fromkeys(("PolicyError", "Problem", "builtin_policy_path", "discover_layers",
                     "load_file"), ".loader"),
    **dict.fromkeys(("AppliedLayer", "LayerReport", "Override"), ".layers"),
    "Policy": ".policy",
    **dict.fromkeys(("Predicate", "PredicateSyntaxError"), ".predicate"),
    **dict.fromkeys(("EmptyRegion", "Region", "Removal"), ".region"),
    **dict.fromkeys(("Conditions", "Rule", "RuleSource", "SwitchOff"), ".rules"),
    **dict.fromkeys(("TRAITS", "KernelTraits", "TraitError", "detect_traits"), ".traits"),
    **dict.fromkeys(("Inactive", "Possible", "RuleMatch", "RuleState", "Verdict", "rule_state"),
                    ".verdict"),
    **dict.fromkeys(("InvalidGate", "VersionGate"), ".versions"),
}


def __getattr__(name: str) -> Any:
    if name in _SOURCES:
        value = getattr(importlib.import_module(_SOURCES[name], __name__), name)
        globals()[name] = value  # cached; also wins over the submodule `policy`
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
