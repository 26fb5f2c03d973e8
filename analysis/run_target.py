"""Which target a run loaded, as runs are grouped by: the history index, tonight's judgement and the fit's
idle run beside it all ask it, so it is said once. Pure: run.json's `target` in, a name out."""

from __future__ import annotations


def target_of(meta: dict) -> str:
    """The target as runs are grouped by: the gateway and what was sampled (run.json `target.sampled`:
    a started target's command, the processes, patterns or cgroups watched), with the URL of a target
    the kit did not start; older runs: the gateway and URL. A command's options (its `--` words on) are
    left out: the same gateway started with other flags tonight is judged against its nights, not apart."""
    target = meta.get("target")
    if not isinstance(target, dict):
        return "unknown target"
    sampled = target.get("sampled")
    if isinstance(sampled, list) and sampled:
        url = None if target.get("started_by_kit") else target.get("url")
        return " · ".join(str(part) for part in [target.get("gateway"), url, *map(_program, sampled)] if part)
    where = target.get("url") or target.get("command") or "unknown target"
    return f"{target.get('gateway', 'unknown')} {where}" if target.get("gateway") else str(where)


def _program(sampled: object) -> str:
    """ "started: python -m simgateway --port {port} --ttft-ms 400" -> "started: python -m simgateway"."""
    words = str(sampled).split(" ")
    cut = next((i for i, w in enumerate(words) if w.startswith("--")), len(words))
    return " ".join(words[:cut])
