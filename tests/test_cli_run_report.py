"""`tunegate run` says what it tuned (one row per tuning on stderr, nothing when nothing was
tuned) and stops a script that tunes from its top level with one line saying what to do."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import KERNELS

SCRIPT = str(KERNELS / "run_add.py")


def tunegate_run(*argv: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tunegate", "run", SCRIPT, *argv],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_run_ends_with_one_row_per_tuning_on_stderr(tmp_path):
    done = tunegate_run(cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok True True"  # the table never reaches stdout
    lines = done.stderr.splitlines()
    start = lines.index("tunegate: 2 tuning(s)")
    header, rule, *rows = lines[start + 1:]
    assert header.split() == ["kernel", "key", "winner", "time", "tuning", "configs"]
    assert set(rule) <= {"-", " "}
    assert [r.split()[0] for r in rows] == ["add_kernel", "add_kernel"]
    assert "n=64," in rows[0] and "n=48," in rows[1]
    assert all("BLOCK=" in r and " ms " in r and "2 (all kept)" in r for r in rows)


def test_run_prints_no_table_when_nothing_was_tuned(tmp_path):
    done = tunegate_run("--no-launch", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_a_script_tuning_from_its_top_level_is_one_line_saying_what_to_do(tmp_path):
    done = tunegate_run("--top-level", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"tunegate: error: {SCRIPT}:27: tuning add_kernel runs from the "
                           "script's top level"), line
    assert 'if __name__ == "__main__":' in line
