"""The base of every simulated agent: an httpx client per agent, error classification, raw reporting.

Each agent reports through Locust's own `request` event (so Locust's stats and UI see it) with the raw
record in the event context (so requests.csv gets exact values). Protocol logic lives in subclasses.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import httpx
from gevent import GreenletExit
from locust import User
from locust.exception import StopUser

from agents.run_context import context_of
from agents.settings import AgentSettings
from agents.shield import shielded
from agents.wire.gevent_transport import GeventTransport
from agents.wire.lean_http import MergedUrls, cookies_only_when_set, use_plain_poll
from agents.wire.reading import (
    BoundedBody,
    DeadlineExceeded,
    ReadBounds,
    TooLarge,
    deadline,
    error_preview,
    release,
)
from agents.wire.request_body import encode_body
from agents.wire.target_origin import client_options
from agents.workload import AgentWorkload, Draw, agent_workload
from contract import (
    gevent_compat,  # noqa: F401 - before any httpx client exists
    schema,
)
from contract.records import AgentRecord, RequestRecord, TaskRecord
from contract.redact import redact
from contract.schema import AGENT_EVENT, TASK_STATUS
from scenarios.pacing import Ticket
from scenarios.workloads.settings import WorkloadSettings

_AGENT_IDS = itertools.count(1)
A = TypeVar("A", bound="KitAgent")
IDLE_POLL_S = 0.2
CONNECTIONS = 8  # an agent's HTTP client's pool; a step's sub-agents each need one of their own
DEFAULT_PROMPT = "Summarise the state of the task board in one sentence."
TERMINAL_STATUSES = frozenset({TASK_STATUS.done, TASK_STATUS.failed, TASK_STATUS.cancelled})
use_plain_poll()  # once per process, before any request: httpcore's keep-alive check without a watcher


class AgentError(Exception):
    """A failed agent operation, as Locust's stats show it."""


class KitAgent(User):
    """Abstract base: subclasses implement tasks with `self.http` and report with `report()`."""

    abstract = True

    @classmethod
    def program_run(cls, settings: AgentSettings) -> tuple[str, str] | None:
        """The program each agent of this class runs, as (the option giving it, its command line), found
        before any load (kit/startup.py); None: it runs none."""
        return None

    def __init__(self, environment):
        super().__init__(environment)
        self.agent_number = next(_AGENT_IDS)  # this load generator's n-th agent: its workload stream
        self.agent_id = f"{os.getpid()}-{self.agent_number}"
        self.http: httpx.Client | None = None
        self.urls: MergedUrls | None = None  # the client's absolute URL per path, made once
        self.backoff_until = 0.0
        self.round: int | None = None  # the rounds profile's round the current work belongs to
        self.arrival: int | None = None  # the open model's arrival the current work serves (its index)
        self.arrival_due_ts: float | None = None  # when it was due, until its first request is reported
        self.settings = context_of(environment).settings  # converted once by the run (kit/settings.py)
        self.loop_runner: Any = None  # its loop's runner (agents/loop/agent_loop.py), made on its first task
        self.mcp_tools: Any = None  # its loop's MCP session (agents/loop/mcp_tools.py), opened on first use
        self.bounds = read_bounds(self.settings)

    def on_start(self) -> None:
        self.follow_pacing()
        base_url = self.environment.host or self.host
        if not base_url:
            raise StopUser("no target URL (--host)")
        connections = max(CONNECTIONS, subagents_of(self.settings.workload))
        self.http = httpx.Client(
            base_url=base_url,
            timeout=httpx.Timeout(self.settings.request_timeout, connect=10.0),
            headers=auth_headers(self.settings.api_key_env),
            transport=GeventTransport(connections, shared_tls_context()),
            **client_options(base_url, self.settings.host_auth),
        )
        cookies_only_when_set(self.http)
        self.urls = MergedUrls(self.http)

    def follow_pacing(self) -> None:
        """Paced (the open model, rounds): the schedule spaces the work, not the wait time."""
        if context_of(self.environment).spaces_work():
            self.wait_time = lambda: 0  # type: ignore[method-assign]

    def on_stop(self) -> None:
        if self.http is not None:
            self.http.close()

    @property
    def client(self) -> httpx.Client:
        """The agent's HTTP client, made at on_start."""
        if self.http is None:
            raise AgentError("no HTTP client: the agent has not started")
        return self.http

    @contextlib.contextmanager
    def streamed(
        self, method: str, path: str, client: httpx.Client | None = None, **kwargs
    ) -> Iterator[httpx.Response]:
        """One HTTP request under the whole-request deadline (--request-timeout, connect to last byte):
        the caller reads the body inside, through `self.body(response)` (bounded) or `http_record`. A
        `json=` body is encoded here, a loop's history from its parts (agents/wire/request_body.py)."""
        if "json" in kwargs:
            kwargs["content"] = encode_body(kwargs.pop("json"))
            kwargs["headers"] = {"Content-Type": "application/json", **(kwargs.get("headers") or {})}
        client = client or self.client
        url = self.urls(path) if self.urls is not None and self.urls.client is client else path
        response = None
        try:
            with deadline(self.bounds.deadline_s), client.stream(method, url, **kwargs) as response:
                yield response
        finally:
            if response is not None:
                release(response)

    def body(self, response: httpx.Response) -> BoundedBody:
        """The response's body, read within --max-response-bytes (and --max-sse-line-bytes as lines)."""
        return BoundedBody(response, self.bounds)

    @property
    def run_id(self) -> str:
        return self.settings.run_id

    @property
    def tag(self) -> str:
        """What every prompt of this agent carries: its id and the run's (gateways like Hermes derive a
        session from the first message; a person reading the gateway's log finds the run)."""
        return f"[agent {self.agent_id} run {self.run_id}]"

    def tagged_prompt(self) -> str:
        """The fixed prompt of a run with no workload: the agent's tag, then --prompt or the default."""
        return f"{self.tag} {self.settings.prompt or DEFAULT_PROMPT}"

    def session_of(self, draw: Draw, own: str) -> str:
        """The session a request goes in: a trace line's session id (with the run id), else `own`."""
        return f"{self.run_id}-trace-{draw.session}" if draw.session else own

    @functools.cached_property
    def workload(self) -> AgentWorkload:
        """This agent's draws from the run's workload (its stream of prompts and think times)."""
        workload = self.settings.workload
        return agent_workload(
            self.environment, workload, self.settings.max_tokens, self.agent_number, self.tag
        )

    def report(self, record: RequestRecord, response_length: int = 0) -> None:
        """Fire Locust's request event carrying the raw record."""
        self.stamp_lateness(record)
        if record.retry_after_s:
            self.backoff_until = time.monotonic() + record.retry_after_s
        self.environment.events.request.fire(
            request_type=record.operation.split(".")[0].upper(),
            name=record.operation,
            response_time=record.latency_ms or 0.0,
            response_length=response_length,
            exception=None
            if record.ok or self.tolerated(record)
            else AgentError(redact(f"{record.error_kind}: {record.error}")),
            context={"kit_record": record},
        )

    def stamp_lateness(self, record: RequestRecord) -> None:
        """The first request of an arrival carries its start lateness: sent minus due (a wait for a
        free agent, or the load generator's own delay)."""
        if self.arrival_due_ts is not None:
            record.start_lateness_ms = round((record.ts - self.arrival_due_ts) * 1000.0, 3)
            self.arrival_due_ts = None

    def tolerated(self, record: RequestRecord) -> bool:
        """A 429 stays a failed row in requests.csv; with --backpressure-ok Locust counts it as a success."""
        return record.error_kind == "backpressure" and self.settings.backpressure_ok

    def record(self, record: RequestRecord | TaskRecord | AgentRecord) -> None:
        """A row straight to the run directory, past Locust's stats (report() goes through them)."""
        context_of(self.environment).record(record)

    def record_closed(self, session_id: str | None, error: str | None = None, failed: bool = False) -> None:
        """agents.csv's row for one session's end: `closed` (with why, when the server ended it), or
        `close_failed` with the reason; the one place every protocol's close is written."""
        event = AGENT_EVENT.close_failed if failed else AGENT_EVENT.closed
        self.record(
            AgentRecord(
                ts=time.time(), agent_id=self.agent_id, session_id=session_id, event=event, error=error
            )
        )

    def json_call(
        self,
        operation: str,
        method: str,
        path: str,
        ids: dict | None = None,
        check: Callable[[dict], tuple[str, str] | None] | None = None,
        expect: type[dict] | type[list] = dict,
        client: httpx.Client | None = None,
        deferred: list[RequestRecord] | None = None,
        **kwargs,
    ) -> tuple[Any, RequestRecord]:  # the JSON body: a dict (a list with expect=list), or None
        """One JSON request, reported as a row; the body is None when the request failed.

        `check` sees a 2xx body and may return (error_kind, message) for protocol-level errors that arrive
        with HTTP 200 (JSON-RPC errors), so the row is failed before it is reported. `expect=list` takes a
        JSON array as the body instead of an object. A request made off the event loop (on the capacity
        driver's start-up clock) passes that thread's own `client` and gets its row in `deferred`, to be
        reported on the loop (Locust's events and stats are not for other threads).
        """
        self.honour_backoff()
        record = RequestRecord(ts=time.time(), agent_id=self.agent_id, operation=operation, **(ids or {}))
        if self.target_dead():  # e.g. clean-up in on_stop: a frozen target would hold it for the timeout
            record.ok, record.error_kind, record.error = False, "connection", "not sent: the target is dead"
            return None, record
        started = time.perf_counter()
        body = None
        try:
            with (
                self.reported_if_cut(record, started),
                self.streamed(method, path, client, **kwargs) as response,
            ):
                http_record(record, response)
                content = self.body(response).read() if record.ok else b""
            record.latency_ms = (time.perf_counter() - started) * 1000.0
            if record.ok:
                body = json.loads(content) if content else expect()
                if not isinstance(body, expect):
                    text = one_line(content.decode(errors="replace"), 60)
                    raise ValueError(f"expected a JSON {expect.__name__}, got {text}")
                body = _checked(record, body, check)
        except Exception as exc:  # every failure becomes a row, never a crash
            failed_record(record, exc, started)
            body = None
        if deferred is None:
            self.report(record)
        else:
            deferred.append(record)
        return body, record

    @contextlib.contextmanager
    def reported_if_cut(self, record: RequestRecord, started: float):
        """A request the run's stop cuts short (this agent's greenlet killed) is still a row: failed,
        error kind `interrupted`, its latency so far. Not a Locust failure: the gateway did not fail it
        (Locust may cut a request at a profile's normal end too, even with --stop-timeout)."""
        try:
            yield
        except GreenletExit:
            record.ok, record.error_kind = False, schema.ERROR_INTERRUPTED
            record.error = "the run stopped before the answer"
            record.latency_ms = (time.perf_counter() - started) * 1000.0
            self.stamp_lateness(record)
            self.record(record)
            raise

    def poll_task(self, row: TaskRecord, poll_once: Callable[[TaskRecord], None]) -> None:
        """Call `poll_once` until the row's status is terminal or the task timeout passes."""
        timeout, interval = self.settings.task_timeout, self.settings.poll_interval
        row.poll_interval_ms = interval * 1000.0
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                poll_once(row)
                row.polls += 1
                if row.status in TERMINAL_STATUSES:
                    return
                time.sleep(interval)
        except GreenletExit:  # the run stopped mid-task: the row says so (status unfinished)
            self.record_unfinished(row)
            raise
        row.status, row.error = TASK_STATUS.timeout, f"not terminal after {timeout:g} s"

    def submitted(self, submit: Callable[[], TaskRecord | None]) -> TaskRecord | None:
        """`submit()` (create a task on the gateway, remember its id for cleanup, give its row) in a greenlet
        of its own: a kill meanwhile waits for the gateway's answer (up to --request-timeout), so a task it
        made is never lost: its row says unfinished and on_stop cleans it up."""
        made: list[TaskRecord] = []

        def submit_and_keep() -> None:
            row = submit()
            if row is not None:
                made.append(row)

        try:
            shielded(submit_and_keep, self.settings.request_timeout)
        except GreenletExit:
            for row in made:
                self.record_unfinished(row)
            raise
        return made[0] if made else None

    def record_unfinished(self, row: TaskRecord) -> None:
        row.status, row.error = TASK_STATUS.unfinished, "the run stopped before the task ended"
        row.fill_durations()
        self.record(row)

    def target_dead(self) -> bool:
        """The run has found the target dead or frozen: nothing more is sent (and no row written)."""
        link = context_of(self.environment).link
        return link is not None and link.target_dead()

    def take_ticket(self) -> Ticket | None:
        """Under an open model or rounds, wait for this agent's next permitted start (None: no work
        now, come back later). Closed-model runs always get a ticket at once."""
        pacing = context_of(self.environment).pacing
        if pacing is None:
            return Ticket()
        ticket = pacing.take(time.time())
        if ticket is None:
            time.sleep(IDLE_POLL_S)
            return None
        if ticket.start_ts is not None:
            time.sleep(max(0.0, ticket.start_ts - time.time()))
        return ticket

    def finish_ticket(self, ticket: Ticket) -> None:
        pacing = context_of(self.environment).pacing
        if pacing is not None:
            pacing.finished(ticket, time.time())

    def honour_backoff(self) -> None:
        """Wait out a Retry-After the gateway asked for before sending again."""
        delay = self.backoff_until - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def subagents_of(workload: WorkloadSettings) -> int:
    """The sub-agents one of the workload's steps runs at once (0: none)."""
    loop = workload.tool_loop
    return loop.subagents.count if loop is not None and loop.subagents is not None else 0


def _checked(record: RequestRecord, body: dict | list, check) -> dict | list | None:
    problem = check(body) if check else None
    if problem is None:
        return body
    record.ok, record.error_kind, record.error = False, problem[0], one_line(problem[1])
    return None


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """One TLS context for every agent: building one (loading CA certificates) takes tens of ms of
    CPU, which under gevent stalls every other agent's stream and inflates their measured TTFT."""
    return ssl.create_default_context()


def warm_up_http() -> None:
    """Import what the first httpx.Client imports lazily (httpcore and its protocol modules) and build
    the TLS context, at init: left to the first agent's start, those imports block the gevent loop for
    seconds on a busy machine, long enough for a Locust master to drop a worker (heartbeat timeout)."""
    httpx.Client(verify=shared_tls_context()).close()


def paced(work: Callable[[A], None]) -> Callable[[A], None]:
    """Gate an agent's task by the run's pacing: under an open model it starts at its scheduled
    arrival (its index in `self.arrival`, e.g. a trace's k-th request; its first request records the
    start lateness), under rounds it takes a slot of the current round (its number in `self.round`); a
    closed-model run is not affected. Use under Locust's @task."""

    @functools.wraps(work)
    def gated(self: A) -> None:
        self.honour_backoff()  # an agent waiting out a Retry-After is not free to take an arrival
        ticket = self.take_ticket()
        if ticket is None:
            return
        self.round, self.arrival, self.arrival_due_ts = ticket.round, ticket.arrival, ticket.start_ts
        try:
            work(self)
        finally:
            self.arrival_due_ts = None
            self.finish_ticket(ticket)

    gated.paced = True  # type: ignore[attr-defined] # a marker tests/agents/test_pacing_open_model.py reads
    return gated


def thinking(default: Callable[[Any], float]) -> Callable[[Any], float]:
    """An agent's Locust wait_time: the workload's think time (--think-time) when it sets one, else the
    agent's own `default` (between(0.5, 1.5) for the chat-like agents), as it always was."""

    def wait(user: Any) -> float:
        think = user.workload.think()
        return default(user) if think is None else think

    return wait


def auth_headers(api_key_env: str | None) -> dict[str, str]:
    """Bearer auth from an environment variable; the key itself is never stored or logged."""
    if not api_key_env:
        return {}
    key = os.environ.get(api_key_env)
    return {"Authorization": f"Bearer {key}"} if key else {}


def classify_status(status: int) -> str | None:
    if status == 429:
        return "backpressure"
    if status >= 500:
        return "http_5xx"
    if status >= 400:
        return "http_4xx"
    if status >= 300:
        return "http_3xx"  # a redirect is never followed: a load test stays on its target
    return None


def read_bounds(settings) -> ReadBounds:
    return ReadBounds(settings.request_timeout, settings.max_response_bytes, settings.max_sse_line_bytes)


def classify_exception(exc: Exception) -> str:
    if isinstance(exc, TooLarge):
        return schema.ERROR_TOO_LARGE
    if isinstance(exc, (httpx.TimeoutException, DeadlineExceeded)):
        return "timeout"
    if isinstance(exc, (httpx.TransportError, ConnectionError)):  # ConnectionError: a child's pipes
        return "connection"
    return "protocol"


def one_line(text: object, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def failed_record(record: RequestRecord, exc: Exception, started: float) -> RequestRecord:
    """Fill a record for a request that raised instead of answering."""
    record.ok = False
    record.error_kind = classify_exception(exc)
    record.error = one_line(f"{type(exc).__name__}: {exc}")
    record.latency_ms = (time.perf_counter() - started) * 1000.0
    return record


def http_record(record: RequestRecord, response: httpx.Response) -> RequestRecord:
    """Fill status and error fields from an HTTP response; of an error answer, only the start of its
    body is read (the row keeps one line)."""
    record.status_code = response.status_code
    kind = classify_status(response.status_code)
    if kind:
        record.ok = False
        record.error_kind = kind
        record.error = one_line(error_preview(response))
        if kind == "http_3xx":
            record.error = f"not followed: redirect to {response.headers.get('location')}"
        record.retry_after_s = retry_after_seconds(response) if kind == "backpressure" else None
    return record
