"""``python -m bench.claims [--quick] [--seed N] [--only FAMILY …]``: the claims' error rates as a table."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from bench.claims import rates  # noqa: E402 - after the sys.path line above


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.claims", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="the small sweep the tests run")
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--only", nargs="*", default=[], choices=[n for n, _ in rates.FAMILIES])
    args = ap.parse_args(argv)
    sizes = rates.QUICK if args.quick else rates.FULL
    sw = rates.sweep(args.seed, sizes, tuple(args.only))
    print(rates.table(sw))
    cases = sum(t.cases for t in sw.rows.values())
    failed = [t.claim for t in sw.rows.values() if t.passed is False]
    print(f"\n{'quick' if args.quick else 'full'} sweep, seed {args.seed}: {cases} scored claims in "
          f"{sw.seconds:.0f} s on {platform.node() or 'this machine'} ({os.cpu_count()} CPUs); "
          f"{len(failed)} row{'s' if len(failed) != 1 else ''} miss{'' if len(failed) != 1 else 'es'} the target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
