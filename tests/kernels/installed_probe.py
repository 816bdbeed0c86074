"""Run as `tunegate run -m tests.kernels.installed_probe ARGS`: reports what it ran under, and
installs tunegate itself too, as a program written for `tunegate.install()` does."""

import sys

import triton

import tunegate

if __name__ == "__main__":
    installed = triton.runtime.autotuner.Autotuner.__module__ == "tunegate.autotune.dropin"
    tunegate.install()
    print(f"installed={installed} again={tunegate.installed()} argv={sys.argv[1:]} "
          f"main={__name__ == '__main__'}")
    sys.exit(3)
