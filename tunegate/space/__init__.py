"""What can be tuned: parameter domains, spaces, configs and the features they control."""

from .domains import Boolean, Choice, Domain, IntRange, Permutation, PerLoop, PowerOfTwo
from .features import FEATURES, FEATURES_VERSION, Feature, UnknownFeature, feature, uses
from .helion import HELION_FIELDS, helion_space, helion_space_for, parse_config_text
from .space import LAUNCH_OPTIONS, Config, InvalidConfig, Parameter, Space

__all__ = [
    "FEATURES", "FEATURES_VERSION", "HELION_FIELDS", "LAUNCH_OPTIONS", "Boolean", "Choice",
    "Config", "Domain", "Feature", "IntRange", "InvalidConfig", "Parameter", "PerLoop",
    "Permutation", "PowerOfTwo", "Space", "UnknownFeature", "feature", "helion_space",
    "helion_space_for", "parse_config_text", "uses",
]
