"""capacity.csv as both memory studies read it: the memory column of the metric judged, a column's last
value, and whether the rows are churn's (sessions opened and closed) or capacity's.

Reading only; the figures are analysis/capacity.py's and analysis/churn.py's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from contract.schema import CAPACITY, CAPACITY_EVENT, MIB

METRIC_COLUMNS = {"rss": CAPACITY.rss_bytes, "pss": CAPACITY.pss_bytes}


def has_rows(frame: pd.DataFrame | None) -> bool:
    """A capacity.csv with readings (its event column present)."""
    return frame is not None and not frame.empty and "event" in frame


def is_churn(frame: pd.DataFrame) -> bool:
    """Rows of the churn profile: batches of sessions opened and closed."""
    return bool(frame["event"].isin([CAPACITY_EVENT.opened, CAPACITY_EVENT.closed]).any())


def memory_column(frame: pd.DataFrame, metric: str) -> pd.Series:
    """The metric's memory in MiB (NaN where it was not read)."""
    col = METRIC_COLUMNS[metric]
    values = frame[col] if col in frame else pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(values, errors="coerce") / MIB


def column_value(frame: pd.DataFrame, column: str):
    values = frame[column].dropna() if column in frame else pd.Series(dtype=object)
    return values.iloc[-1] if len(values) else None
