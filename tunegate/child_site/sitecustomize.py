"""Run at the start of each Python process a program under `tunegate run` starts (see
`tunegate.children`): tunegate is installed as Triton loads, then the `sitecustomize` this one
hides on `sys.path`, if any, runs as it would have."""

import os
import sys


def _install_tunegate() -> None:
    if os.environ.get("TUNEGATE_RUN_CHILDREN") != "1":
        return
    try:
        from tunegate.children import install_when_triton_loads
    except ImportError:  # another interpreter, without tunegate: it runs as it would have
        return
    install_when_triton_loads()


def _run_the_hidden_one() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_install_tunegate()
_run_the_hidden_one()
