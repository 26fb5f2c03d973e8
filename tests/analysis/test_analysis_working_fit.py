"""The fit profile's answer from run.json "fit", on steps whose figures are known lines: MiB per working
agent and the first agent's cost read back exactly, a limit a step breached is measured, the others are
extrapolated on their OLS line and marked so, projections to another box follow the stated assumptions,
and summary.json and the headline carry the same answer."""

from __future__ import annotations

import pytest

from analysis.headline import headline
from analysis.load import load_run
from analysis.model import RunData
from analysis.report import build_sections
from analysis.summary_json import summary
from analysis.working_fit import fit_answer
from contract.schema import CAPACITY_CSV, MIB
from scenarios.fit import FitParams, judge_limits, limit_rules
from tests.analysis.test_capacity_analysis import synthetic_run
from tests.fit_params import fit_params
from tests.synthetic import write_run_dir


def params(**changes) -> FitParams:
    """A 500 MiB budget, a 3000 MiB available floor, a 90 % CPU limit, projected to 4 GiB and 2 cores."""
    limits = dict(
        max_agents=50,
        memory_budget_bytes=500 * MIB,
        min_available_bytes=3000 * MIB,
        cpu_limit_pct=90.0,
        project="4GiB,2cores",
    )
    return fit_params(**(limits | changes))


def step(agents: int, p: FitParams) -> dict:
    """A step whose target holds 100 MiB + 50 MiB per agent, takes 5 % of a core per agent (2.5 % of the
    2-core host), on a host at 10 % CPU per agent with 4000 MiB available less 50 MiB per agent."""
    figures = {
        "agents": agents,
        "start_ts": 1000.0 + 10 * agents,
        "scored_ts": 1008.0 + 10 * agents,
        "steady": True,
        "steady_why": "",
        "rss_mib": 100.0 + 50 * agents,
        "sidecar_rss_mib": 20.0 + 3 * agents,  # an MCP server measured apart (--sidecar-match)
        "available_mib": 4000.0 - 50 * agents,
        "cpu_target_pct": 5.0 * agents,
        "cpu_target_share_pct": 2.5 * agents,
        "cpu_host_pct": 10.0 * agents,
        "latency_p95_ms": 120.0,
        "ttft_p95_ms": None,
        "latency_n": 40,
        "requests": 40,
        "errors": 0,
        "goodput": None,
    }
    figures["limits"] = judge_limits(figures, p, ())
    return figures


def fit_run(tmp_path, p: FitParams, last: int, binding: str) -> RunData:
    steps = [step(n, p) for n in range(last + 1)]
    record = {
        "params": p.__dict__,
        "steady_rule": "the rule",
        "limit_rules": limit_rules(p, ()),
        "steps": steps,
        "binding": binding,
        "stop_reason": f"{binding} limit reached at {last} agents",
        "unscored_step": None,
    }
    return RunData(path=tmp_path, meta={"profile": {"name": "fit"}, "fit": record})


def test_memory_binds_measured_and_the_other_limits_are_extrapolated_on_their_lines(tmp_path):
    run = fit_run(tmp_path, params(), last=8, binding="memory")  # 100 + 50 x 8 = 500 MiB: the budget
    answer = fit_answer(run)
    assert answer is not None and answer.fits_agents == 7 and answer.binding == "memory"
    assert answer.mib_per_agent == pytest.approx(50) and answer.memory_fit.r2 == pytest.approx(1)
    assert answer.first_agent_mib == pytest.approx(50) and answer.baseline_mib == pytest.approx(100)
    assert answer.sidecar_fit.slope == pytest.approx(3)  # the other half, in the same table
    by = {lim.name: lim for lim in answer.limits}
    assert (by["memory"].agents, by["memory"].how) == (7, "measured")
    assert (by["available memory"].agents, by["available memory"].how) == (
        20,
        "extrapolated",
    )  # 4000-50n >= 3000
    assert (by["CPU"].agents, by["CPU"].how) == (8, "extrapolated")  # 10 % per agent: 90 % at 9
    assert by["errors"].agents is None and by["errors"].how == "not reached up to 8 agents"
    assert answer.sentence().startswith("7 working agents fit at 50.0 MiB per working agent (R² 1.000)")
    assert "the binding limit is memory" in answer.sentence()


def test_the_projection_follows_its_assumptions_and_says_it_is_beyond_the_steps(tmp_path):
    answer = fit_answer(fit_run(tmp_path, params(), last=8, binding="memory"))
    row = answer.projection.loc["4 GiB, 2 cores"]
    assert row["by memory"] == (4096 - 3000 - 100) // 50  # box - floor - fixed cost, per agent
    assert row["by CPU"] == 2 * 90 // 5  # 2 cores x 90 %, 5 % of a core per agent
    assert bool(row["by memory: beyond 8 measured"]) and bool(row["by CPU: beyond 8 measured"])


def test_summary_json_and_the_headline_carry_the_fit(tmp_path):
    run = fit_run(tmp_path, params(), last=8, binding="memory")
    fit = summary(run)["fit"]
    assert fit["binding"] == "memory" and fit["n_fit"] == 7
    assert fit["mib_per_working_agent"] == pytest.approx(50) and fit["r2"] == pytest.approx(1)
    assert fit["n_per_limit"]["CPU"] == {"n": 8, "how": "extrapolated", "extrapolated": True, "r2": 1.0}
    head = headline(run)
    assert head.question == "Did working agents fit on this box, and which limit binds first?"
    assert head.verdict.startswith("Yes: 7 working agents fit") and head.held is True
    assert "(rule: working agents fit up to the last steady step no limit bound" in head.verdict
    sections = build_sections(run, None, None)
    assert [s.title for s in sections].index("Fit (working agents)") == 2  # under the headline and summary
    tables = dict(next(s for s in sections if s.title == "Fit (working agents)").tables)
    memory = tables["memory per working agent (OLS over the working steps)"]
    assert memory["MiB per working agent"].round(6).to_dict() == {"target": 50, "sidecar (measured apart)": 3}


def test_a_run_that_is_no_fit_has_no_fit_answer(tmp_path):
    run = RunData(path=tmp_path, meta={"profile": {"name": "smoke"}})
    assert fit_answer(run) is None and summary(run)["fit"] is None


def test_a_capacity_run_of_the_same_target_in_the_folder_is_the_idle_capacity_beside_it(tmp_path):
    """Idle agents at 4 MiB each (the capacity run), working ones at 50: 12.5 times as much; a capacity
    run of another target is not compared."""
    target = {"gateway": "simulator", "started_by_kit": True, "sampled": ["started: python -m simgateway"]}
    other = target | {"sampled": ["started: python -m simgateway --agent-mib 9"]}
    for name, watched, per in (("idle-other", other, 9.0), ("idle", target, 4.0)):
        meta = {"run_id": name, "profile": {"name": "capacity"}, "target": watched}
        synthetic_run(per=per, cap_n=20).to_csv(
            write_run_dir(tmp_path / name, meta) / CAPACITY_CSV, index=False
        )
    fit = fit_run(tmp_path / "fit", params(), last=8, binding="memory")
    write_run_dir(fit.path, fit.meta | {"target": target})
    run = load_run(fit.path)
    idle = summary(run)["fit"]["idle"]
    assert idle["run_id"] == "idle" and idle["mib_per_idle_agent"] == pytest.approx(4)
    assert idle["working_per_idle"] == pytest.approx(12.5)
    section = next(s for s in build_sections(run, None, None) if s.title == "Fit (working agents)")
    assert any("a working agent costs 12.5× an idle one here" in note for note in section.notes)


def test_a_fit_stopped_before_any_limit_or_the_cap_is_not_answered(tmp_path):
    """Interrupted before a limit bound or the cap was reached: neither Yes nor No (a SIGTERM 12 s into a
    fit read "No: 0 working agents fit")."""
    head = headline(fit_run(tmp_path, params(), last=3, binding=None))
    assert head.held is None and head.verdict.startswith("Not answered: "), head.verdict
