"""Read a run directory into RunData, tolerating what crashes leave behind (truncated, empty, absent files).

Only I/O and parsing live here: no statistics. Whatever cannot be read is named in RunData.missing, never
replaced by zeros.
"""

from __future__ import annotations

import csv
import io
import json
import math
import mmap
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.meta import sanitize
from analysis.model import RunData
from contract import schema
from contract.schema import CAPACITY, CAPACITY_COLUMNS, MODEL_CALL, MODEL_CALL_COLUMNS, REQUEST, TASK
from contract.units import unit_of

# Columns holding text; every other contract column is a float (an empty cell reads as NaN).
TEXT_COLUMNS = frozenset(
    {
        "agent_id",
        "operation",
        REQUEST.error_kind,
        "error",
        "model",
        "session_id",
        "request_id",
        "task_id",
        "event",
        "status",
        "phase",
        "host",
        "role",
        "command",
        "why",
        TASK.times_from,
        REQUEST.first_token_kind,
        TASK.end_reason,
        REQUEST.tool_name,
        TASK.parent_task_id,
        TASK.recorded_session,
        CAPACITY.metric,
        CAPACITY.connection,
        CAPACITY.detail,
        CAPACITY.startup_clock,
        MODEL_CALL.response_id,
        MODEL_CALL.api,
        MODEL_CALL.conversation,
        MODEL_CALL.caller,
    }
)
LATENESS = (REQUEST.start_lateness_ms, REQUEST.replay_late_ms)  # may be negative: sent early
NAN_TEXTS = frozenset({"nan", "+nan", "-nan"})  # what float() reads as not-a-number
# A number whose exponent overflows a C int (10 digits or more): pandas' default float parser crashes on
# one (a segmentation fault, pandas 2.3: "1e2147483648", or an id like "0e29821383763f4b"). Shorter
# exponents (a UUID's "123e4567") it reads or refuses safely, so they cost no slower parse.
LONG_EXPONENT_TEXT = r"\d[eE][+-]?\d{10}"
LONG_EXPONENT = re.compile(LONG_EXPONENT_TEXT.encode())


def is_run_dir(path: Path) -> bool:
    """Holds run.json or one of the run's CSVs: something a run (even a killed one) left behind."""
    return any((path / name).exists() for name in (schema.RUN_JSON, *schema.RUN_CSVS))


def resolve_run_dir(value: str, *bases: Path) -> Path:
    """A run directory as a user typed it (a notebook's RUN_DIR): absolute as given; relative, under the
    first of `bases` that holds it (a notebook passes the directory Jupyter was started in, its own, the
    repository root: Jupyter runs a notebook's kernel in the notebook's folder), else under the first."""
    path = Path(value).expanduser()
    if path.is_absolute() or not bases:
        return path
    return next((base / path for base in bases if (base / path).is_dir()), bases[0] / path)


def load_run(path: str | Path, only: Mapping[str, tuple[str, ...]] | None = None) -> RunData:
    """Load every known file of a run directory; absent or damaged ones are listed in `missing`.
    `only`: just these row files, and of each just these columns (what one verdict reads)."""
    run_dir = Path(path)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory not found: {run_dir}")
    missing: list[str] = []
    meta = _read_meta(run_dir / schema.RUN_JSON, missing)
    none_written = _none_written(meta)
    frames = {
        name: _read_contract_csv(
            run_dir / name, cols, missing, name not in none_written, subset=only is not None
        )
        for name, cols in (schema.FILES_COLUMNS if only is None else only).items()
        if name != schema.LOOP_LAG_CSV
    }
    # typed like the rest: pandas' inference reads an id such as "0e29821383763f4b" as a number with an
    # exponent of 29,821,383,763 and crashes (a segmentation fault in its C parser, pandas 2.3)
    capacity = None if only else _optional(run_dir / schema.CAPACITY_CSV, CAPACITY_COLUMNS, missing)
    model_calls = None if only else _optional(run_dir / schema.MODEL_CALLS_CSV, MODEL_CALL_COLUMNS, missing)
    loop_lag = (
        None
        if only is not None and schema.LOOP_LAG_CSV not in only
        else _read_contract_csv(
            run_dir / schema.LOOP_LAG_CSV, schema.LOOP_LAG_COLUMNS, missing, required=False
        )
    )
    # per-process readings serve the rounds' per-worker memory alone: a soak's would be read for nothing
    rounds = bool(((meta or {}).get("profile") or {}).get("rounds"))
    processes, process_readings = _process_files(run_dir, missing) if rounds and not only else (None, None)
    meta = sanitize(meta, _last_ts([*frames.values(), capacity]), missing)
    samples = frames.get(schema.SAMPLES_CSV)
    if samples is not None:  # a remote sampler's rows arrive later than the local one's: one time order
        samples = samples.sort_values("ts", kind="stable", ignore_index=True)
    return RunData(
        path=run_dir,
        meta=meta,
        samples=samples,
        requests=frames.get(schema.REQUESTS_CSV),
        tasks=frames.get(schema.TASKS_CSV),
        agents=frames.get(schema.AGENTS_CSV),
        capacity=capacity,
        users=frames.get(schema.USERS_CSV),
        model_calls=model_calls,
        loop_lag=loop_lag,
        processes=processes,
        process_readings=process_readings,
        missing=missing,
    )


def _optional(path: Path, columns: tuple[str, ...], missing: list[str]) -> pd.DataFrame | None:
    """A file only some runs write (capacity.csv, model_calls.csv), typed by its contract."""
    return _read_contract_csv(path, columns, missing, required=False)


def _process_files(run_dir: Path, missing: list[str]) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """processes.csv and process_readings.csv, where the sampler read the target's processes one by one
    (a run before process_readings.csv, or with no target, has neither to offer: per-worker memory is
    then estimated from the totals, and says so)."""
    if not (run_dir / schema.PROCESS_READINGS_CSV).exists():
        return None, None
    readings = _read_contract_csv(
        run_dir / schema.PROCESS_READINGS_CSV, schema.PROCESS_READING_COLUMNS, missing, required=False
    )
    processes = _read_contract_csv(run_dir / schema.PROCESSES_CSV, schema.PROCESS_COLUMNS, missing, False)
    return processes, readings


def _last_ts(frames: list[pd.DataFrame | None]) -> float | None:
    """The latest timestamp any file recorded: where a killed run's open phase ends."""
    ends = [
        f["ts"].max()
        for f in frames
        if f is not None and "ts" in f and pd.api.types.is_numeric_dtype(f["ts"])
    ]
    ends = [float(e) for e in ends if not pd.isna(e)]
    return max(ends) if ends else None


def _read_meta(path: Path, missing: list[str]) -> dict:
    if not path.exists():
        missing.append(f"{path.name} is absent: profile, thresholds and stop reason unknown")
        return {}
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        missing.append(f"{path.name} is unreadable ({exc.__class__.__name__}): run metadata unknown")
        return {}
    if not isinstance(meta, dict):
        missing.append(f"{path.name} is not a JSON object: run metadata unknown")
        return {}
    return meta


def _none_written(meta: dict) -> set[str]:
    """Row files the run recorded writing no row to (run.json `rows_written`): absent, not missing."""
    written = meta.get("rows_written")
    return {name for name, n in written.items() if n == 0} if isinstance(written, dict) else set()


def _read_contract_csv(
    path: Path, columns: tuple[str, ...], missing: list[str], required: bool = True, subset: bool = False
) -> pd.DataFrame | None:
    """`subset`: read only `columns` (else every column of the file, the contract's typed)."""
    dtypes = {c: (object if c in TEXT_COLUMNS else "float64") for c in columns}
    return _read_csv(path, dtypes, missing, required=required, subset=subset)


def _read_csv(
    path: Path, dtypes: dict | None, missing: list[str], required: bool, subset: bool = False
) -> pd.DataFrame | None:
    """Read one CSV, dropping a last line cut mid-write; None (and a note) when nothing is usable."""
    if not path.exists():
        if required:
            missing.append(f"{path.name} is absent")
        return None
    frame = _read_whole(path, dtypes, subset) if _ends_in_newline(path) else None
    if frame is None:
        frame = _read_damaged(path, dtypes, missing, subset)
    if frame is None:
        return None
    if dtypes:
        frame = _drop_non_finite(frame, dtypes, path.name, missing)
        _blank_negative_durations(frame, dtypes, path.name, missing)
    if frame.empty:
        missing.append(f"{path.name} has a header but no rows")
    if dtypes:
        _add_absent_columns(frame, dtypes, path.name, missing)
    return frame


def _ends_in_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(0, io.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, io.SEEK_END)
        return f.read(1) == b"\n"


def _read_whole(path: Path, dtypes: dict | None, subset: bool) -> pd.DataFrame | None:
    """The common case, a file that ends whole: parsed as it is read (a day's requests.csv is never
    held twice); None when it does not parse (the careful reading says why)."""
    try:
        return _parse(path, dtypes, subset)
    except (ValueError, pd.errors.ParserError):  # UnicodeDecodeError and EmptyDataError are ValueErrors
        return None


def _read_damaged(path: Path, dtypes: dict | None, missing: list[str], subset: bool) -> pd.DataFrame | None:
    """What a crash or a hand edit leaves: empty, a last line cut mid-write, rows that do not parse."""
    raw = path.read_bytes()
    if not raw.strip():
        missing.append(f"{path.name} is empty")
        return None
    if not raw.endswith(b"\n"):
        raw = raw[: raw.rfind(b"\n") + 1]
        missing.append(f"{path.name} ends in a truncated line (dropped; the rows before it are kept)")
    if not raw.strip():
        missing.append(f"{path.name} has no complete line")
        return None
    try:
        return _parse(io.BytesIO(raw), dtypes, subset)
    except (ValueError, pd.errors.ParserError):  # UnicodeDecodeError is a ValueError too
        frame = _read_row_by_row(raw, dtypes, path.name, missing)
    if frame is not None and subset and dtypes:
        frame = frame[[c for c in frame.columns if c in dtypes]]
    return frame


def _parse(source: Path | io.BytesIO, dtypes: dict | None, subset: bool) -> pd.DataFrame:
    """The CSV with the contract's types, an empty cell as not measured. Text is parsed as categories and
    handed back as plain strings: repeated values (an operation, a model) then share one string object,
    which on a day's million rows takes ~100 MB less at the peak and parses faster."""
    parsing = {c: "category" if kind is object else kind for c, kind in dtypes.items()} if dtypes else None
    wanted = (lambda c: c in parsing) if subset and parsing else None
    precision = "round_trip" if _long_exponent(source) else None  # Python's own parser: a bad cell raises
    frame = pd.read_csv(
        source,
        dtype=parsing,
        usecols=wanted,
        keep_default_na=False,
        na_values=[""],
        float_precision=precision,
    )
    for column in [c for c, kind in (dtypes or {}).items() if kind is object and c in frame]:
        frame[column] = frame[column].astype(object)
    return frame


def _long_exponent(source: Path | io.BytesIO) -> bool:
    """Whether the file holds a number pandas' default parser would crash on (scanned mapped, not read
    into memory: ~1 s a GB)."""
    if isinstance(source, io.BytesIO):
        return LONG_EXPONENT.search(source.getbuffer()) is not None
    with source.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        return LONG_EXPONENT.search(mapped) is not None


def _read_row_by_row(raw: bytes, dtypes: dict | None, name: str, missing: list[str]) -> pd.DataFrame | None:
    """Slow path for a damaged file: rows with the wrong number of fields or binary bytes are skipped
    and counted; a non-numeric cell in a numeric column is read as not measured, and counted."""
    text = raw.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        missing.append(f"{name} could not be parsed: {exc}")
        return None
    header, body = rows[0], rows[1:]
    good = [r for r in body if len(r) == len(header) and not any("\ufffd" in c for c in r)]
    if len(good) < len(body):
        missing.append(f"{name}: {len(body) - len(good)} malformed or binary row(s) skipped")
    frame = pd.DataFrame(good, columns=header).replace("", None)
    bad = 0
    for col in frame.columns:
        if (dtypes or {}).get(col) == "float64":
            # such an exponent crashes pandas' to_numeric too: read as non-numeric before it
            cells = frame[col].mask(frame[col].str.contains(LONG_EXPONENT_TEXT, na=False), "-")
            parsed = pd.to_numeric(cells, errors="coerce")
            # a written "nan" is no empty cell ("not measured"): non-finite, so its row is skipped
            parsed[frame[col].str.strip().str.lower().isin(NAN_TEXTS)] = math.inf
            bad += int((parsed.isna() & frame[col].notna()).sum())
            frame[col] = parsed.astype("float64")
    if bad:
        missing.append(f"{name}: {bad} non-numeric cell(s) in numeric columns read as not measured")
    return frame


def _drop_non_finite(frame: pd.DataFrame, dtypes: dict, name: str, missing: list[str]) -> pd.DataFrame:
    """Rows holding a non-finite number (a hand-edited nan or inf: the kit writes none) are skipped and
    counted: one would poison every mean, percentile and time axis."""
    bad = np.zeros(len(frame), dtype=bool)
    for column in (c for c, kind in dtypes.items() if kind == "float64" and c in frame.columns):
        bad |= np.isinf(frame[column].to_numpy(dtype="float64"))  # column by column: no copy of them all
    if not bad.any():
        return frame
    missing.append(f"{name}: {int(bad.sum())} row(s) with a non-finite number (nan, inf) skipped")
    return frame[~bad].reset_index(drop=True)


def _blank_negative_durations(frame: pd.DataFrame, dtypes: dict, name: str, missing: list[str]) -> None:
    """A negative duration (a wall clock stepped back between two timestamps: an NTP step, a VM resumed)
    is no time at all: blanked, so no percentile, mean or level takes it, and counted apart with a note;
    the row itself stays (its outcome is still counted). A start's lateness may be negative (early)."""
    durations = [
        c
        for c, kind in dtypes.items()
        if kind == "float64" and unit_of(c) == "ms" and c not in LATENESS and c in frame
    ]
    negative = np.zeros(len(frame), dtype=bool)
    for column in durations:
        below = frame[column].to_numpy(dtype="float64") < 0
        if below.any():
            frame.loc[below, column] = np.nan
            negative |= below
    if negative.any():
        missing.append(
            f"{name}: {int(negative.sum())} row(s) with a negative duration (the clock stepped back during "
            "them): those times are left out of every percentile and mean, the rows still counted"
        )


def _add_absent_columns(frame: pd.DataFrame, dtypes: dict, name: str, missing: list[str]) -> None:
    """Give contract columns the writer did not write an all-empty column, and say which."""
    absent = [c for c in dtypes if c not in frame.columns]
    for col in absent:
        frame[col] = pd.Series(dtype=dtypes[col], index=frame.index)
    if absent:
        missing.append(f"{name} lacks column(s) {', '.join(absent)} (read as not measured)")
