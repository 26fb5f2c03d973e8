"""`python -m kit.cleanup RUN_DIR`: close on the gateway every session a run directory says is still open
(created, never closed), e.g. after a SIGKILL; each close is appended to the run's agents.csv. An MCP
run's own probe session (the liveness probe's, run.json `mcp_probe_session`) is closed the same way.

It touches only the sessions that run recorded (their ids carry its run id); the protocol comes from the
run's gateway preset or spec file. When the gateway is gone (the run's own, stopped at its end, or nothing
answers at its address) there is nothing to close: it says so, exit 0. Bad input: one line on stderr,
exit code 2.
"""

from __future__ import annotations

import csv
import json
import sys
from argparse import Namespace
from pathlib import Path
from urllib.parse import quote

import configargparse
import httpx
from locust.env import Environment

from agents import presets
from agents.base import KitAgent
from agents.capacity.idle_sessions import (
    CONNECTION_FRESH,
    RestSessionClient,
    close_and_record,
    session_http_client,
)
from agents.mcp import options as mcp_options
from agents.run_context import new_context
from agents.settings import AgentSettings
from agents.wire.target_origin import split_userinfo
from contract import exit_codes, schema
from contract.cli import positive_duration
from contract.http_probe import PROBE_MAX_BYTES, probe_get
from contract.schema import AGENT_EVENT
from kit.record import MCP_PROBE_SESSION
from kit.rows import RowRecorder

OPEN_EVENTS = (
    AGENT_EVENT.created,
    AGENT_EVENT.failed,
)  # a failed start-up that got an id still exists on the gateway


LISTING_TIMEOUT_S = 5.0  # the gateway's list of a run's sessions, at the run's end and here


class CleanupError(Exception):
    """A run directory or gateway that cannot be cleaned; the message is one line."""


class Closer(KitAgent):
    """A Locust user that never runs: it lends the kit's request recording to the closes."""

    abstract = True


def still_open(run_dir: Path, also: tuple[str, ...] = ()) -> list[str]:
    """Session ids the run recorded as opened (agents.csv, and capacity.csv, which is flushed at every
    step; `also`: others it opened, e.g. its MCP probe's) and agents.csv does not show closed, in
    creation order. A create in flight at a SIGKILL reached no file: the gateway's own list by run id is
    the only way to find that one. Plain csv, not pandas: the run itself asks this at its end, inside the
    load generator."""
    agents, steps = _rows(run_dir / schema.AGENTS_CSV), _rows(run_dir / schema.CAPACITY_CSV)
    closed = {row["session_id"] for row in agents if row.get("event") == AGENT_EVENT.closed}
    opened = [row["session_id"] for row in agents if row.get("event") in OPEN_EVENTS]
    opened += [row["session_id"] for row in steps] + list(also)
    return [sid for sid in dict.fromkeys(opened) if sid not in closed]


def _rows(path: Path) -> list[dict[str, str]]:
    """The file's rows that name a session (none when it is absent or empty)."""
    try:
        with open(path, newline="", encoding="utf-8") as file:
            return [row for row in csv.DictReader(file) if row.get("session_id")]
    except FileNotFoundError:
        return []


def read_meta(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / schema.RUN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CleanupError(f"{run_dir}: no readable {schema.RUN_JSON} ({exc})") from None


def closer_for(run_dir: Path, meta: dict, args: Namespace) -> tuple[Closer, RestSessionClient, RowRecorder]:
    target = meta.get("target") or {}
    gateway, url = args.gateway or target.get("gateway") or "simulator", args.host or target.get("url")
    try:
        chosen = presets.preset(gateway)
        protocol = presets.closable_sessions(chosen)
    except presets.GatewayError as exc:
        raise CleanupError(str(exc)) from None
    if not url:
        raise CleanupError("the run recorded no gateway URL: pass --host URL")
    url, host_auth = split_userinfo(url.rstrip("/"))
    environment = Environment(host=url)
    settings = AgentSettings(
        run_id=meta.get("run_id", run_dir.name),
        run_dir=run_dir,
        host_auth=host_auth,
        api_key_env=args.api_key_env or chosen.api_key_env,
        request_timeout=args.request_timeout,
        gateway=gateway,
        mcp_url=args.mcp_url or target.get("mcp_url") or AgentSettings.mcp_url,
    )
    new_context(environment, settings)
    recorder = RowRecorder(environment, run_dir)
    closer = Closer(environment)
    return closer, presets.session_client(chosen)(closer, protocol), recorder


class TargetGone(Exception):
    """The run's gateway is gone, and its sessions with it: nothing to close. The message says why."""


def target_gone(meta: dict, args: Namespace) -> str | None:
    """Why the run's sessions cannot be open any more, or None: the gateway was the kit's own simulator
    (its sessions live in its memory, gone with it), or nothing answers at its address now."""
    target = meta.get("target") or {}
    if target.get("kit_simulator") and not args.host:
        return "it was the run's own simulator, stopped with the run"
    url = split_userinfo((args.host or target.get("url") or "").rstrip("/"))[0]
    if not url:
        return None
    try:
        with httpx.Client(timeout=args.request_timeout) as client:
            probe_get(client, url, args.request_timeout)
    except httpx.ConnectError:
        return f"nothing answers at {url}"
    except httpx.HTTPError:
        return None  # it answers, slowly or oddly: try the closes
    return None


def confirmed_open(meta: dict, ids: list[str], timeout_s: float = LISTING_TIMEOUT_S) -> list[str] | None:
    """Of `ids` (open by the run's rows), those the gateway itself lists as open, where its preset can list
    a run's sessions; None when it cannot say (no listing, no answer, an answer not understood)."""
    target = meta.get("target") or {}
    try:
        listing = presets.preset(target.get("gateway") or "simulator").session_listing
    except presets.GatewayError:
        return None
    url = split_userinfo((target.get("url") or "").rstrip("/"))[0]
    if not listing or not url:
        return None
    path = listing.replace("{run_id}", quote(str(meta.get("run_id", "")), safe=""))
    try:
        with httpx.Client(timeout=timeout_s) as client:
            doc = probe_get(client, url + path, timeout_s, PROBE_MAX_BYTES).json()
        listed = {str(item["id"]): item.get("status") for item in doc["data"]}  # type: ignore[index]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None
    return [sid for sid in ids if sid in listed and listed[sid] != "closed"]


def clean(run_dir: Path, args: Namespace) -> tuple[int, int]:
    """(closed, failed) for the sessions still open in `run_dir` (those the gateway lists as open, where
    it can list them); TargetGone when they went with it."""
    meta = read_meta(run_dir)
    probe = meta.get(MCP_PROBE_SESSION)
    ids = still_open(run_dir, (str(probe),) if probe else ())
    if not ids:
        return 0, 0
    if (why := target_gone(meta, args)) is not None:
        raise TargetGone(f"the target is gone ({why}): nothing to close ({len(ids)} session(s) went with it)")
    if not args.host and (listed := confirmed_open(meta, ids)) is not None:
        ids = listed
    closer, client, recorder = closer_for(run_dir, meta, args)
    http = closer.http = session_http_client(closer, CONNECTION_FRESH)
    try:
        closed = sum(close_and_record(closer, client, sid) for sid in ids)
    finally:
        http.close()
        recorder.close()
    return closed, len(ids) - closed


def parse_args(argv: list[str] | None) -> Namespace:
    parser = configargparse.ArgumentParser(prog="python -m kit.cleanup", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run directory (runs/<run-id>)")
    parser.add_argument("--host", help="the gateway's URL (default: the one in run.json)")
    parser.add_argument("--gateway", help="preset or spec:FILE (default: the one in run.json)")
    parser.add_argument(
        "--api-key-env", help="environment variable holding the API key (default: the preset's)"
    )
    url = mcp_options.add_url(parser)  # the kit's one declaration; unset here: the run's own
    url.default, url.help = None, f"{url.help} (default: the one in run.json)"
    parser.add_argument(
        "--request-timeout", type=positive_duration, default=30.0, help="time per close (default 30s)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        closed, failed = clean(args.run_dir, args)
    except CleanupError as exc:
        sys.stderr.write(f"loadkit cleanup: error: {exc}\n")
        return exit_codes.BAD_INPUT
    except TargetGone as exc:
        print(f"{args.run_dir}: {exc}")
        return exit_codes.OK
    print(f"{args.run_dir}: {closed} session(s) closed, {failed} could not be closed (see agents.csv)")
    return exit_codes.OK if failed == 0 else exit_codes.REQUEST_ERRORS


if __name__ == "__main__":
    sys.exit(main())
