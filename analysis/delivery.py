"""Was each load level delivered? Asked against what the load generator did: for the open model, the
arrivals asked at a level (its rate x the seconds it was held) against those started, started late and
dropped; for the closed model, the agents the profile asked for against those running. A level that was
not delivered was not held (analysis/breaking.py skips it), and a run whose peak was not delivered ends
with exit code 7 (kit/finish.py asks `peak_shortfall`). Pure: a levels table or users.csv in, verdicts out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from contract.schema import USER

SHORT_PCT = 5.0  # a level whose late or dropped arrivals, or missing rate, exceed this share is not delivered
NOISE_SD = 3.0  # Poisson arrivals: a rate shortfall counts only beyond this many standard deviations
MIN_ASKED = 10  # a level asked fewer arrivals than this is too thin to judge its delivery
DELIVERED, NOT_DELIVERED, TOO_FEW = "delivered", "not delivered", "too few arrivals"
RULE = (
    f"a level is not delivered when more than {SHORT_PCT:g} % of its arrivals started late or were dropped, "
    f"or it started more than {SHORT_PCT:g} % (and {NOISE_SD:g} Poisson SDs) fewer arrivals than asked; "
    f"closed model: fewer than {100 - SHORT_PCT:g} % of the agents asked were running"
)


@dataclass(frozen=True)
class Shortfall:
    """The level a run's load was not delivered at, in its unit, and why."""

    level: float
    unit: str
    why: str
    rule: str = RULE

    def text(self) -> str:
        return f"at {self.level:g} {self.unit}: {self.why}"


def judge_open(table: pd.DataFrame) -> None:
    """Add each open-model level's delivery (`delivery`, `delivery_why`, `delivered_pct`, and `late_pct`,
    `dropped_pct` of the arrivals due: each counted once, started on time, late or dropped, as the Arrivals
    section counts them) to its table, read from `seconds`, `achieved_per_s`, `started`, `late`, `dropped`."""
    asked = table.index.to_series() * table["seconds"]
    due = (table["started"] + table["late"] + table["dropped"]).where(lambda n: n > 0)
    table["asked"] = asked.round(1)
    table["delivered_pct"] = table["achieved_per_s"] / table.index.to_series() * 100
    table["late_pct"] = table["late"] / due * 100
    table["dropped_pct"] = table["dropped"] / due * 100
    verdicts = [_open_verdict(level, row) for level, row in table.iterrows()]
    table["delivery"] = [v for v, _ in verdicts]
    table["delivery_why"] = [why for _, why in verdicts]


def _open_verdict(level: float, row: pd.Series) -> tuple[str, str]:
    asked = float(row["asked"])
    if not asked >= MIN_ASKED:
        return TOO_FEW, f"{asked:.0f} arrivals asked (< {MIN_ASKED})"
    reasons = []
    allowed = asked * (1 - SHORT_PCT / 100) - NOISE_SD * math.sqrt(asked)
    if row["started"] + row["late"] < allowed:  # sent at all, on time or late
        reasons.append(
            f"{row['achieved_per_s']:.4g}/s started of {level:g}/s asked ({row['delivered_pct']:.1f} %)"
        )
    for name in ("late", "dropped"):
        share = row[f"{name}_pct"]
        if share > SHORT_PCT:
            reasons.append(f"{share:.1f} % {name} ({int(row[name]):,})")
    return (NOT_DELIVERED, "; ".join(reasons)) if reasons else (DELIVERED, "")


def delivered(table: pd.DataFrame) -> pd.Series:
    """Which levels may be judged as held or broken: all but those not delivered (a table without a
    delivery verdict, a sweep's passes, say, counts as delivered)."""
    if "delivery" not in table:
        return pd.Series(True, index=table.index)
    return table["delivery"] != NOT_DELIVERED


def peak_shortfall(table: pd.DataFrame, unit: str, users: pd.DataFrame | None) -> Shortfall | None:
    """Why the run's load was not delivered at its peak: the highest judged open-model level not
    delivered, or (closed model) the most agents running short of the most asked; None when delivered."""
    if "delivery" in table:
        judged = table[table["delivery"] != TOO_FEW]
        if judged.empty or judged["delivery"].iloc[-1] != NOT_DELIVERED:
            return None
        return Shortfall(float(judged.index[-1]), unit, str(judged["delivery_why"].iloc[-1]))
    return closed_shortfall(users, unit)


def closed_shortfall(users: pd.DataFrame | None, unit: str) -> Shortfall | None:
    """The closed model's peak: the most agents asked (users.csv target_users) against the most running."""
    if users is None or users.empty or users[USER.target_users].isna().all():
        return None
    asked, running = float(users[USER.target_users].max()), float(users[USER.users].max())
    if not asked > 0 or running >= asked * (1 - SHORT_PCT / 100):
        return None
    why = f"{running:g} of {asked:g} agents asked were running at most ({running / asked * 100:.1f} %)"
    return Shortfall(asked, unit, why)
