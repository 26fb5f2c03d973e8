"""Make run.json safe to read: fields of an unexpected type are dropped, phases a killed run left open are
closed at the last recorded row, and each repair is named in one sentence. Pure: dicts in, dicts out.
"""

from __future__ import annotations

from typing import Any

NUMBER = (int, float)
# Top-level run.json fields the analysis reads, with the types it can use.
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "run_id": (str,),
    "created_ts": NUMBER,
    "start_ts": NUMBER,
    "end_ts": NUMBER,
    "exit_code": (int,),
    "stop_reason": (str,),
    "trend_min_duration_s": NUMBER,
    "profile": (dict,),
    "target": (dict,),
    "thresholds": (list,),
    "cost": (dict,),
    "validity": (dict,),
    "workers_cpu_p90": (dict,),
    "breakpoint": (dict,),
    "open_model": (dict,),
    "sweep": (list,),
    "slos": (list,),
    "sampler": (dict,),
    "ended_early": (bool,),
    "workers_lost": (list,),
    "rows_written": (dict,),
    "allow_unjudged": (bool,),
}
THRESHOLD_TYPES: dict[str, tuple[type, ...]] = {
    "expr": (str,),
    "passed": (bool, type(None)),
    "value": (*NUMBER, type(None)),
    "samples": (int, type(None)),
}


def _fits(value: Any, types: tuple[type, ...]) -> bool:
    """isinstance, but a bool is no number here (True is not a timestamp)."""
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def sanitize(meta: dict, last_ts: float | None, missing: list[str]) -> dict:
    """A copy of run.json's fields that the analysis can read; every repair appended to `missing`."""
    clean = {}
    for key, value in meta.items():
        types = FIELD_TYPES.get(key)
        if types is None or _fits(value, types):
            clean[key] = value
        else:
            missing.append(
                f"run.json field {key!r} is a {type(value).__name__}, not {_names(types)}: ignored"
            )
    if isinstance(clean.get("thresholds"), list):
        clean["thresholds"] = _thresholds(clean["thresholds"], missing)
    if isinstance(clean.get("profile"), dict):
        clean["profile"] = _profile(clean["profile"], last_ts, missing)
    if clean and not {"end_ts", "stop_reason", "exit_code"} & clean.keys():
        missing.append("run.json has no end time, stop reason or exit code: the run did not finish (killed?)")
    return clean


def _names(types: tuple[type, ...]) -> str:
    return " or ".join(sorted({"number" if t in NUMBER else t.__name__ for t in types}))


def _thresholds(entries: list, missing: list[str]) -> list[dict]:
    keep = [
        t
        for t in entries
        if isinstance(t, dict) and all(_fits(t.get(k), v) for k, v in THRESHOLD_TYPES.items())
    ]
    if len(keep) < len(entries):
        missing.append(
            f"run.json: {len(entries) - len(keep)} threshold entr(ies) of unexpected shape ignored"
        )
    return keep


def _profile(profile: dict, last_ts: float | None, missing: list[str]) -> dict:
    """Phases and rounds with numeric start times; an open end becomes the next start or the last row."""
    out = dict(profile)
    if not isinstance(out.get("name"), str):
        out.pop("name", None)
    for key in ("phases", "rounds"):
        items = out.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            missing.append(f"run.json profile.{key} is not a list: ignored")
            out.pop(key)
            continue
        out[key] = _spans(key, items, last_ts, missing)
    return out


def _spans(key: str, items: list, last_ts: float | None, missing: list[str]) -> list[dict]:
    spans = [dict(i) for i in items if isinstance(i, dict) and _fits(i.get("start_ts"), NUMBER)]
    if len(spans) < len(items):
        missing.append(f"run.json: {len(items) - len(spans)} {key} entr(ies) without a start time ignored")
    for i, span in enumerate(spans):
        following = spans[i + 1] if i + 1 < len(spans) else None
        if _fits(span.get("end_ts"), NUMBER):
            continue
        end = following["start_ts"] if following else last_ts
        name = span.get("name", span.get("round", "?"))
        if end is None or end < span["start_ts"]:
            missing.append(f"run.json: {key[:-1]} {name!r} has no end and no later row: ignored")
            span["drop"] = True
            continue
        span["end_ts"] = end
        missing.append(
            f"run.json: {key[:-1]} {name!r} has no end (run killed?): closed at {_when(following)}"
        )
    return [s for s in spans if not s.pop("drop", False)]


def _when(following: dict | None) -> str:
    return "the next one's start" if following else "the last recorded row"
