"""Where two runs' imports differ: python's `-X importtime` lines (PYTHONPROFILEIMPORTTIME=1) of
each log, summed per top-level package, the packages whose imports took longest in either
listed with both totals. For a second `tunegate run` against stock's start-up (peer_suite.sh's
imports and imports2 runs): a package that imports slower under tunegate, or that only it
imports, shows here.
Usage: python benchmarks/import_diff.py STOCK_LOG TUNEGATE_LOG [--top N]
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path


def self_seconds(log: Path) -> dict[str, float]:
    """Seconds of import each top-level package took in `log` (its modules' self times)."""
    totals: dict[str, float] = collections.Counter()
    for line in log.read_text(errors="replace").splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        try:
            self_us, _cumulative, name = line.split(":", 1)[1].split("|")
            totals[name.strip().split(".")[0]] += int(self_us) / 1e6
        except ValueError:
            continue  # a line another process's output broke
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stock", type=Path)
    parser.add_argument("tunegate", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    a, b = self_seconds(args.stock), self_seconds(args.tunegate)
    print(f"all imports: stock {sum(a.values()):.2f} s, tunegate {sum(b.values()):.2f} s")
    print(f"{'package':32} {'stock s':>8} {'tunegate s':>10} {'diff s':>7}")
    for name in sorted(set(a) | set(b), key=lambda n: -max(a.get(n, 0), b.get(n, 0)))[:args.top]:
        print(f"{name:32} {a.get(name, 0):8.2f} {b.get(name, 0):10.2f} "
              f"{b.get(name, 0) - a.get(name, 0):+7.2f}")


if __name__ == "__main__":
    main()
