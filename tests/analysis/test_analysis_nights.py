"""`python -m analysis index RUNS_DIR --judge`: tonight's run of each profile and target against its last
nights that completed with exit 0, figure by figure, on run directories holding run.json and
summary.json as the kit writes them (made up here, so the truth is known)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from analysis.__main__ import main
from analysis.index import JUDGEMENT_JSON, judge_index
from analysis.nights import REGRESSED, WITHIN
from contract import exit_codes
from tests.synthetic import T0

DAY = 86400.0
SIM = {"gateway": "simulator", "url": "http://127.0.0.1:8000", "started_by_kit": True, "sampled": ["sim"]}


def night(
    root: Path, name: str, day: float, ttft: float, profile: str = "soak", exit_code=0, **extra
) -> Path:
    """A run directory of `profile` started `day` days after T0, its p95 TTFT `ttft` ms."""
    path = root / name
    path.mkdir(parents=True)
    meta = {
        "run_id": name,
        "start_ts": T0 + day * DAY,
        "exit_code": exit_code,
        "target": extra.pop("target", SIM),
    }
    summary = {
        "profile": profile,
        "exit_code": exit_code,
        "headline": {"verdict": "Memory: no evidence of leak"},
        "requests": {"total": 1000, "failed": 2},
        "latency": {"latency": {"p95": 900.0 + ttft}, "ttft": {"p95": ttft, "n": 1000}},
        "soak": {"target RSS": {"slope_per_h": 0.5}},
        "peak_target_rss_mib": 150.0,
        **extra,
    }
    (path / "run.json").write_text(json.dumps(meta))
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def five_nights(root: Path) -> Path:
    for day, ttft in enumerate((300, 305, 298, 310, 302)):
        night(root, f"night-{day}", day, ttft)
    return root


def test_a_ttft_30_percent_worse_than_the_nights_regresses_naming_tonight_and_the_nights(tmp_path):
    root = five_nights(tmp_path / "runs")
    night(root, "tonight", 5, 400)
    _, verdict = judge_index(root)
    assert verdict.exit_code == exit_codes.THRESHOLD_FAILED
    (group,) = verdict.groups
    ttft = next(f for f in group.figures if f.name == "ttft_p95")
    assert (
        ttft.verdict == REGRESSED and ttft.tonight == 400 and sorted(ttft.nights) == [298, 300, 302, 305, 310]
    )
    assert "p95 TTFT: regressed: tonight 400 ms against the last 5 nights' 298 to 310 ms" in ttft.text()
    saved = json.loads((root / JUDGEMENT_JSON).read_text())
    assert saved["exit_code"] == 99 and saved["groups"][0]["tonight"] == "tonight"
    md = (root / "index.md").read_text()
    assert "## Tonight against the nights before" in md and "p95 TTFT: regressed" in md
    assert "Tonight against the nights before" in (root / "index.html").read_text()


def test_a_night_like_the_others_is_within_their_spread_exit_0(tmp_path):
    root = five_nights(tmp_path / "runs")
    night(root, "tonight", 5, 306)
    _, verdict = judge_index(root)
    assert verdict.exit_code == exit_codes.OK
    assert {f.verdict for f in verdict.groups[0].figures} == {WITHIN}


def test_other_profiles_and_targets_are_never_compared_and_failed_nights_are_left_out_with_why(tmp_path):
    root = five_nights(tmp_path / "runs")
    other = {**SIM, "sampled": ["another gateway"]}
    for day in range(4):
        night(root, f"avg-{day}", day + 0.5, 900, profile="average")  # a slow profile: not tonight's nights
        night(root, f"other-{day}", day + 0.5, 900, target=other)
    night(root, "failed", 4.5, 100, exit_code=99)  # a fast night that failed: not a night to compare with
    night(root, "tonight", 5, 330)
    _, verdict = judge_index(root, last=7)
    groups = {(g.profile, g.target.split(" · ")[-1]): g for g in verdict.groups}
    soak = groups[("soak", "sim")]
    assert soak.tonight == "tonight" and "failed" not in soak.nights and len(soak.nights) == 5
    assert any(line.startswith("failed (") and "exit code 99" in line for line in soak.left_out)
    assert {f.verdict for f in soak.figures} == {WITHIN}  # 330 is within 10 % of the soaks' worst
    assert groups[("average", "sim")].tonight == "avg-3"
    another = groups[("soak", "another gateway")]
    assert another.tonight == "other-3" and all(n.startswith("other-") for n in another.nights)


def test_too_few_nights_is_not_judged_exit_8_and_unreadable_runs_are_named(tmp_path, capsys):
    root = tmp_path / "runs"
    night(root, "night-0", 0, 300)
    night(root, "night-1", 1, 300)
    night(root, "tonight", 2, 300)
    (root / "garbage").mkdir()
    (root / "garbage" / "run.json").write_bytes(b"\x00{not json")
    assert main(["index", str(root), "--judge"]) == exit_codes.THRESHOLDS_UNJUDGED
    out = capsys.readouterr().out
    assert "not judged" in out and "2 previous night(s)" in out
    assert "garbage" in (root / "index.md").read_text()
    assert json.loads((root / JUDGEMENT_JSON).read_text())["unreadable"][0].startswith("garbage: unreadable")


def test_judge_last_and_a_tolerance_per_figure_change_the_verdict(tmp_path):
    root = five_nights(tmp_path / "runs")
    night(root, "tonight", 5, 400)
    _, loose = judge_index(root, tolerance={"ttft_p95": 0.5, "latency_p95": 0.5})
    assert loose.exit_code == exit_codes.OK
    _, three = judge_index(root, last=3)
    assert three.groups[0].nights == ["night-4", "night-3", "night-2"]


@pytest.mark.parametrize("bad", ["ttfp=30%", "ttft_p95=-1", "ttft_p95=lots"])
def test_a_bad_tolerance_is_one_line_and_exit_2(tmp_path, capsys, bad):
    root = five_nights(tmp_path / "runs")
    with pytest.raises(SystemExit) as ended:
        main(["index", str(root), "--judge", "--judge-tolerance", bad])
    err = capsys.readouterr().err
    assert ended.value.code == exit_codes.BAD_INPUT and len(err.strip().splitlines()) == 1, err
    assert "--judge-tolerance" in err and not (root / JUDGEMENT_JSON).exists()


def test_ten_thousand_runs_are_judged_in_bounded_time(tmp_path):
    """The nightly folder of years of runs of a few profiles and targets: 10,000 run directories."""
    root = tmp_path / "runs"
    for i in range(10_000):
        night(root, f"run-{i:05d}", i / 4, 300 + i % 7, profile=("soak", "average", "smoke", "spike")[i % 4])
    started = time.monotonic()
    _, verdict = judge_index(root)
    took = time.monotonic() - started
    assert len(verdict.groups) == 4 and verdict.exit_code == exit_codes.OK
    assert took < 90, f"{took:.1f} s (the bar is 30 s on a quiet machine)"
