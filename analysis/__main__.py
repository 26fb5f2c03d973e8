"""Command line: `python -m analysis RUN_DIR` (re)builds a run's report; `python -m analysis compare
RUN_A RUN_B ...` prints side-by-side tables. Parses arguments and prints; computes nothing itself.
"""

from __future__ import annotations

import argparse
import sys

from analysis.compare import compare_table
from analysis.load import load_run
from analysis.render import table_markdown
from analysis.report import write_report
from analysis.summary import console_summary
from contract import exit_codes
from contract.schema import MIB


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["compare"]:
            return _compare(args[1:])
        return _report(args)
    except (FileNotFoundError, NotADirectoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_codes.BAD_INPUT


def _report(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis", description="(Re)build a run's report.")
    parser.add_argument("run_dir")
    parser.add_argument(
        "--warning-mib",
        type=float,
        default=1024.0,
        help="available-memory warning line in MiB (default 1024)",
    )
    ns = parser.parse_args(args)
    out = write_report(ns.run_dir, ns.warning_mib * MIB)
    print(console_summary(load_run(ns.run_dir)))
    print(f"report: {out}")
    return exit_codes.OK


def _compare(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis compare", description="Compare runs.")
    parser.add_argument("run_dirs", nargs="+")
    ns = parser.parse_args(args)
    print(table_markdown(compare_table([load_run(d) for d in ns.run_dirs])))
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
