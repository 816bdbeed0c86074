"""A sitecustomize that tunegate run's own hides (tests/autotune/test_install.py)."""
import os

os.environ["HIDDEN_SITECUSTOMIZE_RAN"] = "yes"
