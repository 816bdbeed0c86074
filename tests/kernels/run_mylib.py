"""An unmodified program using the stock-triton kernel library; `tunegate run` tunes it."""

import sys

import torch

from tests.kernels.mylib import matmul


def main() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(40, 24), torch.randn(24, 36)
    ok_mm = torch.allclose(matmul.matmul(a, b), a @ b, atol=1e-4)
    kernel = matmul.matmul_kernel
    print(f"matmul={ok_mm} tuner={type(kernel).__module__} "
          f"best_in_configs={kernel.best_config in kernel.configs} args={sys.argv[1:]}")


if __name__ == "__main__":
    main()
