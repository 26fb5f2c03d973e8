"""Command line: `python -m analysis RUN_DIR [--out DIR]` (re)builds a run's report; `python -m analysis
index RUNS_DIR` writes the history across runs; `python -m analysis compare RUN_A RUN_B ...` prints
side-by-side tables. Parses arguments and prints; computes nothing itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.compare import compare_table
from analysis.index import JUDGEMENT_JSON, judge_index, write_index
from analysis.load import is_run_dir, load_run
from analysis.nights import BY_NAME, LAST_NIGHTS, tolerance_option
from analysis.render import table_markdown
from analysis.report import write_report
from analysis.summary import console_summary
from contract import exit_codes
from contract.cli import positive_float, positive_int
from contract.errors import one_line
from contract.schema import MIB


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2 (the kit's bad-input rule)."""

    def error(self, message: str):
        self.exit(exit_codes.BAD_INPUT, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    commands = {"compare": _compare, "index": _index}
    try:
        if args[:1] and args[0] in commands:
            return commands[args[0]](args[1:])
        return _report(args)
    except (FileNotFoundError, NotADirectoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
    except OSError as exc:  # a read-only or full run directory: name the file and the way out
        print(
            f"error: cannot write {exc.filename}: {exc.strerror} (write elsewhere with --out DIR)",
            file=sys.stderr,
        )
    return exit_codes.BAD_INPUT


def _report(args: list[str]) -> int:
    parser = _Parser(prog="python -m analysis", description="(Re)build a run's report.")
    parser.add_argument("run_dir")
    parser.add_argument(
        "--warning-mib",
        type=positive_float,
        default=1024.0,
        help="available-memory warning line in MiB (default 1024)",
    )
    parser.add_argument("--out", default=None, help="write the report here instead of into the run directory")
    ns = parser.parse_args(args)
    if not Path(ns.run_dir).is_dir():
        raise FileNotFoundError(f"run directory not found: {ns.run_dir}")
    if not is_run_dir(Path(ns.run_dir)):
        raise FileNotFoundError(f"not a run directory (no run.json and no run CSV): {ns.run_dir}")
    run = load_run(ns.run_dir)  # read once: the report and the summary share it
    try:
        out = write_report(run, ns.warning_mib * MIB, ns.out)
    except OSError:
        raise  # a read-only or full directory: main() names the file and the way out
    except Exception as exc:  # the summary below needs no report: print it anyway
        print(f"error: report not written: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
        print(console_summary(run))
        return exit_codes.REPORT_FAILED
    print(console_summary(run))
    print(f"report: {out}")
    return exit_codes.OK


def _index(args: list[str]) -> int:
    parser = _Parser(prog="python -m analysis index", description="History across run directories.")
    parser.add_argument("runs_dir")
    parser.add_argument("--out", default=None, help="write index.md/.html here instead of into RUNS_DIR")
    parser.add_argument(
        "--judge",
        action="store_true",
        help="judge each profile and target's newest run against its previous nights (judgement.json; "
        "exit 99 when a figure regressed, 8 when too few nights)",
    )
    parser.add_argument(
        "--judge-last",
        type=positive_int,
        default=LAST_NIGHTS,
        metavar="N",
        help=f"nights to compare with (default {LAST_NIGHTS})",
    )
    parser.add_argument(
        "--judge-tolerance",
        action="append",
        default=[],
        type=_tolerance,
        metavar="FIG=X",
        help="a figure's margin as a share of the nights' median, e.g. ttft_p95=30%%; figures: "
        + ", ".join(BY_NAME),
    )
    ns = parser.parse_args(args)
    if not ns.judge:
        print(f"index: {write_index(ns.runs_dir, ns.out)}")
        return exit_codes.OK
    path, verdict = judge_index(ns.runs_dir, ns.out, ns.judge_last, dict(ns.judge_tolerance))
    print("\n".join(verdict.lines()))
    print(f"index: {path}\njudgement: {path.parent / JUDGEMENT_JSON}\nexit code: {verdict.exit_code}")
    return verdict.exit_code


def _tolerance(text: str) -> tuple[str, float]:
    try:
        return tolerance_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _compare(args: list[str]) -> int:
    parser = _Parser(prog="python -m analysis compare", description="Compare runs.")
    parser.add_argument("run_dirs", nargs="+")
    ns = parser.parse_args(args)
    print(table_markdown(compare_table([load_run(d) for d in ns.run_dirs])))
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
