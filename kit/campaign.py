"""Capacity campaigns: K independent runs, each a fresh load-generator process that starts (and stops) a
fresh target, then the per-run / median / range table, the plot, and before/after of two campaigns.

    python -m kit.campaign --runs 3 --out campaigns/after --target-cmd "python -m simgateway --port {port}"
    python -m kit.campaign --runs 3 --out campaigns/ab --before-target-cmd "..." --target-cmd "..."
    python -m kit.campaign --compare campaigns/before campaigns/after
Anything after `--` goes to every Locust run (e.g. `-- --memory-budget 512MiB`). The figures come from
analysis/capacity.py; this module only runs processes and reads and writes files.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from analysis.capacity import before_after_table, capacity_result, run_table
from analysis.capacity_plot import capacity_plot
from analysis.load import load_run
from analysis.render import table_markdown
from contract import exit_codes, schema
from contract.cli import positive_duration
from contract.errors import InputError

CAMPAIGN_JSON = "campaign.json"
RUNS_CSV = "capacity_runs.csv"
RUNS_MD = "capacity_runs.md"
PLOT_PNG = "capacity.png"
BEFORE_AFTER_MD = "before_after.md"
PROFILE_FLAG = "--load-profile"


class CampaignError(InputError):
    """Bad input or an unreadable campaign directory; the message is one line."""


@dataclass
class RunOutcome:
    """One run of a campaign, as campaign.json records it."""

    run_dir: str
    exit_code: int | None
    wall_s: float
    target_pid: int | None
    stop_reason: str | None


def locust_command(
    args: argparse.Namespace, run_dir: Path, target_cmd: str | None, extra: list[str]
) -> list[str]:
    """One fresh load-generator process; it starts its own fresh target (kit/runtime.py) and stops it."""
    command = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        args.locustfile,
        "--headless",
        PROFILE_FLAG,
        args.profile,
        "--run-dir",
        str(run_dir),
        "--run-id",
        run_dir.name,
        "--reuse-run-dir",  # the campaign made it, and keeps its locust.log there
    ]
    if target_cmd:
        command += ["--target-cmd", target_cmd]
    if args.sim_args:
        command += ["--sim-args", args.sim_args]
    return command + extra


def run_one(command: list[str], run_dir: Path, timeout_s: float) -> RunOutcome:
    """Run and wait; on timeout kill its process group and the target it started (ours: in run.json)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(run_dir / "locust.log", "wb") as log:
        popen = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(popen.pid)
            code = popen.wait()
    meta = _read_json(run_dir / schema.RUN_JSON)
    target_pid = (meta.get("target") or {}).get("pid")
    if target_pid and popen.returncode != 0:
        _kill_group(target_pid)  # a killed run cannot stop the target it started
    return RunOutcome(
        str(run_dir), code, round(time.monotonic() - started, 2), target_pid, meta.get("stop_reason")
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def run_campaign(
    args: argparse.Namespace, out: Path, target_cmd: str | None, extra: list[str]
) -> list[RunOutcome]:
    outcomes = []
    for k in range(1, args.runs + 1):
        run_dir = out / f"run-{k}"
        outcome = run_one(locust_command(args, run_dir, target_cmd, extra), run_dir, args.timeout)
        print(
            f"campaign: {run_dir} exit {outcome.exit_code}, {outcome.wall_s:.1f} s, target pid "
            f"{outcome.target_pid}, {outcome.stop_reason}",
            flush=True,
        )
        outcomes.append(outcome)
    record = {
        "target_cmd": target_cmd,
        "sim_args": args.sim_args,
        "extra": extra,
        "runs": [asdict(o) for o in outcomes],
    }
    (out / CAMPAIGN_JSON).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return outcomes


def summarise(out: Path) -> pd.DataFrame:
    """Per-run rows + median + range + CV from a campaign directory; writes the CSV, Markdown and plot."""
    runs = {}
    for run_dir in sorted(p for p in out.glob("run-*") if p.is_dir()):
        frame = load_run(run_dir).capacity
        if frame is not None and "event" in frame:
            runs[run_dir.name] = (capacity_result(frame), frame)
    if not runs:
        raise CampaignError(f"no run with a readable {schema.CAPACITY_CSV} under {out}")
    table = run_table({label: result for label, (result, _) in runs.items()})
    table.to_csv(out / RUNS_CSV)
    (out / RUNS_MD).write_text(table_markdown(table) + "\n", encoding="utf-8")
    capacity_plot(runs, out / PLOT_PNG)
    return table


def compare(before: Path, after: Path, out: Path | None) -> pd.DataFrame:
    """The capacity study's before/after table from two campaign directories (their run tables)."""
    table = before_after_table(_runs_table(before), _runs_table(after))
    if out is not None:
        (out / BEFORE_AFTER_MD).write_text(table_markdown(table) + "\n", encoding="utf-8")
    return table


def _runs_table(path: Path) -> pd.DataFrame:
    if not path.is_dir():
        raise CampaignError(f"campaign directory not found: {path}")
    if not (path / RUNS_CSV).exists():
        summarise(path)
    return pd.read_csv(path / RUNS_CSV, index_col="measure")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kit.campaign", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3, help="independent runs per campaign (default 3)")
    p.add_argument("--out", type=Path, default=None, help="campaign directory (default campaigns/<time>)")
    p.add_argument("--target-cmd", default=None, help="command starting a fresh target; {port} = a free port")
    p.add_argument("--before-target-cmd", default=None, help="also run a 'before' campaign with this command")
    p.add_argument("--sim-args", default="", help="simulator knobs when no --target-cmd is given")
    p.add_argument(
        "--load-profile",
        "--profile",
        dest="profile",
        default="capacity",
        help="the kit's --load-profile each run uses (default capacity)",
    )
    p.add_argument("--locustfile", default="locustfile.py")
    p.add_argument(
        "--timeout",
        type=positive_duration,
        default=900.0,
        help="time one run may take before it is killed (15m)",
    )
    p.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("BEFORE", "AFTER"),
        help="only compare two saved campaign directories",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = build_parser().parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    try:
        return _main(args, extra)
    except CampaignError as exc:
        sys.stderr.write(f"campaign: error: {exc}\n")
        return exit_codes.BAD_INPUT


def _main(args: argparse.Namespace, extra: list[str]) -> int:
    if args.compare:
        before, after = args.compare
        print(table_markdown(compare(before, after, None)))
        return exit_codes.OK
    if args.runs < 1:
        raise CampaignError(f"--runs must be at least 1, got {args.runs}")
    out = args.out or Path("campaigns") / time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    plan = (
        [("before", args.before_target_cmd), ("after", args.target_cmd)]
        if args.before_target_cmd
        else [("", args.target_cmd)]
    )
    codes = []
    for name, target_cmd in plan:
        where = out / name if name else out
        codes += [o.exit_code for o in run_campaign(args, where, target_cmd, extra)]
        print(f"\ncampaign {where}:\n{table_markdown(summarise(where))}\n", flush=True)
    if args.before_target_cmd:
        print(f"before/after:\n{table_markdown(compare(out / 'before', out / 'after', out))}", flush=True)
    return campaign_exit_code(codes)


def campaign_exit_code(codes: list[int | None]) -> int:
    """0 when every run ended 0; else the first run's non-zero code (a killed or timed-out run, no code
    or a negative one, counts as invalid)."""
    bad = next((c for c in codes if c != 0), exit_codes.OK)
    return exit_codes.INVALID_RUN if bad is None or bad < 0 else bad


if __name__ == "__main__":
    sys.exit(main())
