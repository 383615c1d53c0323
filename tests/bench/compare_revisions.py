"""Run one benchmark on two revisions of minikafka, side by side in one run.

    .venv/bin/python tests/bench/compare_revisions.py BASE_REV BENCH [--rounds 2] [-- ARGS...]

for example ``compare_revisions.py 6bd653d tests/bench/bench_broker.py -- --quick --no-tansu``.

The base revision is checked out into a temporary git worktree (removed after). Each round
runs the benchmark script of the base tree with that tree first on PYTHONPATH (so its
brokers, started with ``python -m tools.main``, run the base code), then the script of the
working tree, alternating which goes first from round to round: on a shared 2-core machine
the first run after a quiet spell is often the fastest, and alternating spreads that over
both sides. Both use this interpreter and its installed packages.

Every output line that carries numbers is keyed by its text with the numbers taken out
(``produce MB/s perf # #``; the second line of the same shape, such as the next record
size's row, gets `` (2)``); lines whose keys match in every run are printed side by side,
one column per run of each side, so a benchmark needs no special output format.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: a number as the benchmarks print them: 1,234.5 / -3 / 0.35 / 3.15x
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?=x?\b)")


def run(tree: Path, bench: str, args: list[str]) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    print(f"-- {tree.name or tree}: {bench} {' '.join(args)}", flush=True)
    done = subprocess.run(
        [sys.executable, str(tree / bench), *args],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(done.stdout)
        raise SystemExit(f"{bench} failed in {tree} (exit {done.returncode})")
    return done.stdout


def figures(output: str) -> dict[str, list[str]]:
    """Each numbered line's key (the line without its numbers) and its numbers."""
    table: dict[str, list[str]] = {}
    seen: dict[str, int] = {}
    for line in output.splitlines():
        numbers = NUMBER.findall(line)
        if numbers:
            key = " ".join(NUMBER.sub("#", line).split())
            seen[key] = seen.get(key, 0) + 1
            # lines alike but for their numbers (a table's rows per record size) are told
            # apart by their order
            table[key if seen[key] == 1 else f"{key} ({seen[key]})"] = numbers
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the baseline revision (commit, tag or branch)")
    parser.add_argument("bench", help="the benchmark script, relative to the repository")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each side (2)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    opts = parser.parse_args(argv[:cut])
    bench_args = argv[cut + 1 :]  # everything after "--" is the benchmark's
    results: dict[str, list[dict[str, list[str]]]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="bench-base-") as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base_tree), opts.base],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        try:
            sides = [("base", base_tree), ("head", ROOT)]
            for round_no in range(opts.rounds):
                for side, tree in sides if round_no % 2 == 0 else sides[::-1]:
                    results[side].append(figures(run(tree, opts.bench, bench_args)))
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)],
                check=False,
            )
    head_rev = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    print(f"\n{opts.bench}: base {opts.base} against head {head_rev} (working tree), "
          f"{opts.rounds} run(s) each, alternating order")  # fmt: skip
    keys = [k for k in results["head"][0] if all(k in r for r in results["base"] + results["head"])]
    width = max((len(k) for k in keys), default=10)
    for key in keys:
        base = " | ".join(" ".join(r[key]) for r in results["base"])
        head = " | ".join(" ".join(r[key]) for r in results["head"])
        print(f"{key:<{width}}  base: {base:<30} head: {head}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
