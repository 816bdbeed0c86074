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
- in one process, as under `tunegate run`, with the server started apart (an interpreter of
  its own, importing torch beside the program) or forked here (`warm_up(here=True)`):
  program_imports, the program's `import torch, triton` after `warm_up`; spares, until the
  spare workers are forked; first_task, a task given to the spare run worker until it answers
  (its CUDA context, the kernel file's import, draw 0's inputs and reference).

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

# In one process, as under `tunegate run`: `warm_up` at the start, then the program's own
# imports, then its first tuning's worker; HERE: the server forked from this process (the
# command line's way since this benchmark was written) or started as an interpreter of its own.
WORKER = """
import json, sys, time
start = time.perf_counter()
from tunegate.autotune import warm
from tunegate.autotune.pool import WorkerPool
from tunegate.autotune.worker import TaskRef
warm.warm_up(here=sys.argv[2] == "here")
import torch, triton  # the program's own imports
program = time.perf_counter() - start
warm.wait_for_spares()
spares = time.perf_counter() - start
from tunegate.autotune import worker_server
server = worker_server.server()._forkserver_pid
forked = open(f"/proc/{server}/cmdline", "rb").read() == open("/proc/self/cmdline", "rb").read()
pool = WorkerPool(TaskRef(sys.argv[1], "TASK_WITH_REFERENCE"), seed=0, baseline_json=None,
                  compilers=0, deterministic=True)
begin = time.perf_counter()
pool.start_first()
first_task = time.perf_counter() - begin
pool.close()
print(json.dumps({"program_imports": program, "spares": spares, "first_task": first_task,
                  "forked": float(forked)}))
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
        for how in ("apart", "here"):
            out = subprocess.run([sys.executable, "-c", WORKER, kernel, how], check=True,
                                 cwd=ROOT, capture_output=True, text=True).stdout
            for name, value in json.loads(out.strip().splitlines()[-1]).items():
                samples.setdefault(f"{name}_{how}", []).append(value)
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
