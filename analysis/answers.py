"""Yes or no, with the rule that decided it: the first words of every headline. A run without a threshold
of its user's is judged by the kit's default rule for its profile (DEFAULT_RULES: a profile plugs its own
in); a threshold the user gave replaces the default error rule. Pure: RunData in, an Answer out.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.latency import latency_table
from analysis.levels import load_shortfall
from analysis.model import RunData
from analysis.validity import Validity
from contract.records import WorkerLoss

ERROR_LIMIT_PCT = 1.0  # the default rule's error rate for a load profile: fewer failed requests than this
LOAD_RULE = f"error rate < {ERROR_LIMIT_PCT:g} %, load delivered, run valid"
YOUR_RULE = "your thresholds, load delivered, run valid"
NO_THRESHOLD = "No threshold of yours was judged."
# The kit's rule per profile when the user gave no threshold; a profile without an entry is a load profile.
DEFAULT_RULES: dict[str, str] = {
    "capacity": "the memory budget: N_max published when the budget was reached with a steady fit",
    "churn": "memory given back: no MiB retained per closed session (the churn fit's verdict)",
    "rounds": "every round's tasks done with the host's memory and swap within their limits",
    "soak": "the leak and drift verdicts: no evidence of a memory leak or an error-rate drift",
    "breakpoint": (
        "it breaks at the first delivered level whose error rate is above 5 % or where an SLO fell short, "
        "or where an aborting threshold failed"
    ),
    "sweep": "the highest delivered rate that met every SLO (without --slo: errors <= 5 %)",
    "fit": "working agents fit up to the last steady step no limit bound (memory, available memory, CPU, "
    "SLO, errors > 5 %), or the agent cap",
}


def default_rule(profile: str) -> str:
    return DEFAULT_RULES.get(profile, LOAD_RULE)


@dataclass(frozen=True)
class Answer:
    """Held (Yes), not held (No), or None when the run cannot answer; what decided it, and the rule."""

    held: bool | None
    why: str
    rule: str
    note: str = ""  # said after the answer, not the answer ("No threshold of yours was judged.")

    @property
    def word(self) -> str:
        return {True: "Yes", False: "No", None: "Not answered"}[self.held]

    def text(self) -> str:
        note = f" {self.note}" if self.note else ""
        return f"{self.word}: {self.why} (rule: {self.rule}).{note}"


def load_answer(run: RunData, profile: str, validity: Validity) -> Answer:
    """Did the gateway hold the load: the user's thresholds (else the default error rate), the load
    delivered and the run valid, every one; the first that fails is the No."""
    judged = [t for t in thresholds(run) if t.get("passed") is not None]
    rule, note = (
        (YOUR_RULE, "") if judged else (f"the kit's default for {profile}: {LOAD_RULE}", NO_THRESHOLD)
    )
    reasons, failed = _parts(run, judged, validity)
    if failed:
        return Answer(False, failed, rule, note)
    return Answer(True, ", ".join(reasons), rule, note)


def _parts(run: RunData, judged: list[dict], validity: Validity) -> tuple[list[str], str]:
    """What held, in the rule's order, and the first thing that did not ('' when all held)."""
    failed = [t for t in judged if t.get("passed") is False]
    if failed:
        return [], f"{len(failed)} of {len(judged)} thresholds failed, first {failed[0].get('expr')}"
    if judged:
        held = [f"all {len(judged)} thresholds passed"]
    else:
        errors, ok = _error_part(run)
        if not ok:
            return [], errors
        held = [errors]
    if lost := [d for d in run.meta.get("workers_lost") or [] if isinstance(d, dict)]:
        return held, f"the load was not delivered: a worker was lost ({WorkerLoss.from_json(lost[0]).text()})"
    if (short := load_shortfall(run)) is not None:
        return held, f"the load was not delivered {short.text()}"
    held.append("the load was delivered")
    if validity.valid is False:
        return held, f"the run is invalid: {validity.checks[0].reason()}"
    held.append("the run is valid" if validity.valid else "the run's validity was not judged")
    return held, ""


def _error_part(run: RunData) -> tuple[str, bool]:
    """The default rule's error rate with its counts, and whether it held."""
    table = latency_table(run)
    total = int(table["requests"].sum()) if table is not None else 0
    if table is None or not total:
        return "the gateway answered no request", False
    failed = int(table["failed"].sum())
    pct = failed / total * 100
    held = pct < ERROR_LIMIT_PCT
    than = f"{'<' if held else '>='} {ERROR_LIMIT_PCT:g} %"
    return f"{failed:,} of {total:,} requests failed ({pct:.3g} % {than})", held


def thresholds(run: RunData) -> list[dict]:
    found = run.meta.get("thresholds")
    return [t for t in found if isinstance(t, dict)] if isinstance(found, list) else []
