"""The model's side of a run: every call the model answered, pulled from the kit's simulator while it
serves the run (GET /v1/sim/calls?after=SEQ) into model_calls.csv. When the simulator is the model behind
a gateway that runs its own loop (Hermes, OpenClaw, LiteLLM), this is the only place its inner calls,
retries and background work are seen; the report joins them to the kit's requests (analysis/model_calls.py).

A read that fails is retried at the next pull and never stops the run; calls that fell out of the
simulator's bounded log before they were read are counted in run.json (`model_calls.missed`), never
guessed. Polling costs one small request a second to the model's host.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import gevent
import gevent.event
import httpx

from contract import schema
from contract.csv_append import CsvAppender, RunFileError
from contract.schema import MODEL_CALL
from kit.settings import KitSettings

log = logging.getLogger("loadkit")
PULL_EVERY_S = 1.0  # the simulator keeps its last 1,000 calls: read well before that many pile up
TAG = re.compile(r"\[agent (\S+) run (\S+?)[\] ]")  # agents/base.py's tag, leading every prompt


def model_calls_for(settings: KitSettings, target_url: str | None, meta: dict) -> ModelCalls | None:
    """The reader of this run's model: --model-calls-url, else the simulator the kit started itself."""
    url = settings.target.model_calls_url
    kit_simulator = settings.preset.embedded_simulator and not settings.target.host
    if url is None and (not kit_simulator or settings.target.target_cmd or not target_url):
        return None
    return ModelCalls(
        url or str(target_url), settings.run_dir, settings.run_id, meta.setdefault("model_calls", {})
    )


class ModelCalls:
    """Reads one simulator's call log for one run; `record` is run.json's `model_calls` entry."""

    def __init__(self, url: str, run_dir: Path, run_id: str, record: dict) -> None:
        self.url = url.rstrip("/")
        self.run_id = run_id
        self.record = record
        self.rows = CsvAppender(run_dir / schema.MODEL_CALLS_CSV, schema.MODEL_CALL_COLUMNS)
        self.client = httpx.Client(timeout=5.0, follow_redirects=False)
        self.after = 0
        self.record.update(url=self.url, calls=0, missed=0, read_errors=0)
        self._greenlet: gevent.Greenlet | None = None
        self._closing = gevent.event.Event()

    def start(self) -> None:
        self.after = self._newest()  # calls before the run began (the start's own checks) are not its own
        self._greenlet = gevent.spawn(self._pull_forever)

    def close(self) -> None:
        """The last calls read, then the file closed (run.json's entry says how many and how many missed).
        The puller ends between reads: killed inside one, it could leave the client's pool unusable and
        the last read would fail, losing the run's last calls."""
        self._closing.set()
        if self._greenlet is not None:
            self._greenlet.join()
        self.pull()
        try:
            self.rows.close()
        except RunFileError as exc:
            log.error("model calls: %s", exc)
        self.client.close()

    def pull(self) -> None:
        try:
            answer = self.client.get(f"{self.url}/v1/sim/calls", params={"after": self.after})
            answer.raise_for_status()
            calls = answer.json()["calls"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            self.record["read_errors"] += 1
            self.record["last_error"] = f"{type(exc).__name__}: {exc}"[:300]
            return
        for call in calls:
            self.record["missed"] += max(0, call["seq"] - self.after - 1)  # fell out of the log unread
            self.after = call["seq"]
            self.rows.write(self._row(call))
            self.record["calls"] += 1
        try:
            self.rows.flush()
        except RunFileError as exc:
            log.error("model calls: %s", exc)

    def _pull_forever(self) -> None:
        while not self._closing.wait(PULL_EVERY_S):
            self.pull()

    def _newest(self) -> int:
        try:
            return int(
                self.client.get(f"{self.url}/v1/sim/calls", params={"after": 0}).json()["totals"]["calls"]
            )
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return 0

    def _row(self, call: dict) -> dict:
        conversation = call.get("conversation")
        return {
            MODEL_CALL.ts: call.get("ts"),
            MODEL_CALL.response_id: call.get("id"),
            MODEL_CALL.api: call.get("api"),
            MODEL_CALL.conversation: conversation,
            MODEL_CALL.step: call.get("step"),
            MODEL_CALL.caller: call.get("caller"),
            MODEL_CALL.agent_id: self._agent_of(call),
            MODEL_CALL.tokens_in: call.get("prompt_tokens"),
            MODEL_CALL.tokens_cached: call.get("cached_tokens"),
            MODEL_CALL.tokens_out: call.get("completion_tokens"),
            MODEL_CALL.tool_calls: len(call.get("tool_calls") or ()),
            MODEL_CALL.cost_usd: call.get("cost"),
        }

    def _agent_of(self, call: dict) -> str | None:
        """The kit agent whose tag (of this run) is in the user message that opened the call's turn. Not the
        conversation's first message: a gateway's background work on a kit session (Hermes' memory review)
        carries the session's history, but its turn opens with the gateway's own prompt."""
        found = TAG.search(call.get("turn_user") or "")
        return found.group(1) if found and found.group(2) == self.run_id else None
