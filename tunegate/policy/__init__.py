"""What may be tuned here: rules, environment, kernel traits, verdicts and regions.

Importing this package imports neither torch nor triton.
"""

from .env import ENV_FACTS, Environment, InvalidEnvironment, detect_environment
from .loader import PolicyError, Problem, builtin_policy_path, discover_layers, load_file
from .layers import AppliedLayer, LayerReport, Override
from .policy import Policy
from .predicate import Predicate, PredicateSyntaxError
from .region import EmptyRegion, Region, Removal
from .rules import Conditions, Rule, RuleSource, SwitchOff
from .traits import TRAITS, KernelTraits, TraitError, detect_traits
from .verdict import Inactive, Possible, RuleMatch, Verdict
from .versions import InvalidGate, VersionGate

__all__ = [
    "ENV_FACTS", "TRAITS", "AppliedLayer", "Conditions", "EmptyRegion", "Environment",
    "Inactive", "InvalidEnvironment", "InvalidGate", "KernelTraits", "LayerReport", "Override",
    "Policy", "PolicyError", "Possible", "Predicate", "PredicateSyntaxError", "Problem", "Region",
    "Removal", "Rule", "RuleMatch", "RuleSource", "SwitchOff", "TraitError", "Verdict",
    "VersionGate", "builtin_policy_path", "detect_environment", "detect_traits",
    "discover_layers", "load_file",
]
