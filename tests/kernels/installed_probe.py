"""Run as `tunegate run -m tests.kernels.installed_probe ARGS`: reports what it ran under."""

import sys

import triton

if __name__ == "__main__":
    installed = triton.runtime.autotuner.Autotuner.__module__ == "tunegate.autotune.dropin"
    print(f"installed={installed} argv={sys.argv[1:]} main={__name__ == '__main__'}")
    sys.exit(3)
