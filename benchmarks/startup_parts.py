"""What a tuning's first worker costs before it can time anything, part by part (issue 16).

Stock `triton.autotune` tunes in the program's own process, which has already imported torch
and Triton and made its CUDA context; tunegate's run worker is a process of its own, forked
from a server that imports them once. Each part below is timed in fresh processes (the median
of `--repeat` runs, interleaved) on this machine:

- python:     `python -c pass`;
- torch:      `import torch`; torch_triton: `import torch, triton`;
- server:     what the worker server imports (`tunegate.autotune.server_preload`: torch, Triton,
              the runner, Triton's cache key);
- cuda:       `import torch` and a first CUDA tensor (the CUDA context), less `torch`;
- spares:     in one process, `warm_up()` until its spare workers are forked (the server's
              imports included), as under `tunegate run`;
- first_task: then a task given to the spare run worker until it answers (its CUDA context,
              the kernel file's import, draw 0's inputs and reference).

    python benchmarks/startup_parts.py [--repeat 3] [--json FILE]

With `--json`, the server's slowest imports (`-X importtime`, cumulative) are recorded too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "python": "pass",
    "torch": "import torch",
    "torch_triton": "import torch, triton",
    "server": "import tunegate.autotune.server_preload",
    "torch_cuda": "import torch\nif torch.cuda.is_available():\n    torch.zeros(1, device='cuda');"
                  " torch.cuda.synchronize()",
}

# In one process: the spares of `warm_up`, then a first task for the spare run worker.
WORKER = """
import json, sys, time
start = time.perf_counter()
from tunegate.autotune import warm
from tunegate.autotune.pool import WorkerPool
from tunegate.autotune.worker import TaskRef
warm.warm_up()
warm.wait_for_spares()
spares = time.perf_counter() - start
ref = TaskRef(sys.argv[1], "TASK_WITH_REFERENCE")
pool = WorkerPool(ref, seed=0, baseline_json=None, compilers=0, deterministic=True)
begin = time.perf_counter()
pool.start_first()
first_task = time.perf_counter() - begin
pool.close()
print(json.dumps({"spares": spares, "first_task": first_task, "reused": pool.reused}))
"""


def _seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    kernel = str(ROOT / "tests" / "kernels" / "pipelined_copy.py")
    samples: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name, code in COMMANDS.items():
            samples.setdefault(name, []).append(_seconds(code))
        out = subprocess.run([sys.executable, "-c", WORKER, kernel], check=True, cwd=ROOT,
                             capture_output=True, text=True).stdout
        for name, value in json.loads(out.strip().splitlines()[-1]).items():
            if name != "reused":
                samples.setdefault(name, []).append(value)
    median = {name: statistics.median(v) for name, v in samples.items()}
    median["cuda"] = median.pop("torch_cuda") - median["torch"]
    for name, value in median.items():
        print(f"{name:12s} {value:6.2f} s")
    if args.json:
        args.json.write_text(json.dumps({"median_s": median, "samples_s": samples,
                                         "server_imports_s": _slowest_imports()}, indent=1))


def _slowest_imports(top: int = 25) -> list[tuple[str, float]]:
    """The server's imports that took longest, with what they imported (cumulative)."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", COMMANDS["server"]],
                         cwd=ROOT, capture_output=True, text=True, check=True).stderr
    rows = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((parts[2].rstrip(), int(parts[1]) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:top]


if __name__ == "__main__":
    main()
