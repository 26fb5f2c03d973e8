"""Raw per-request, per-task and per-session records that agents emit, one field per schema column.

The field names are the columns of contract/schema.py (a test pins that); None means "not measured". These
records carry facts only: no I/O, no aggregation.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class UsageFields:
    """A model call's token usage and the gateway's own cost, declared once: a request row's usage
    columns and agents/wire/usage.py's Usage (what a response reports) are these fields."""

    tokens_in: int | None = None
    tokens_cached: int | None = None
    tokens_cache_write: int | None = None
    tokens_out: int | None = None
    tokens_reasoning: int | None = None
    model: str | None = None
    gateway_cost_usd: float | None = None


@dataclass
class _RequestHead:
    """The request row's columns before its usage ones (RequestRecord's bases give the column order)."""

    ts: float
    agent_id: str
    operation: str
    ok: bool = True
    status_code: int | None = None
    error_kind: str | None = None
    error: str | None = None
    latency_ms: float | None = None
    ttft_ms: float | None = None
    itl_ms_mean: float | None = None
    itl_ms_max: float | None = None
    chunks: int | None = None


@dataclass
class RequestRecord(UsageFields, _RequestHead):
    """One request's row: the head's columns, the usage ones, then these (a dataclass's fields follow its
    bases from the last listed, so the columns keep contract/schema.py's order)."""

    retry_after_s: float | None = None
    session_id: str | None = None
    request_id: str | None = None
    task_id: str | None = None
    start_lateness_ms: float | None = None
    asked_tokens_in: int | None = None
    asked_tokens_out: int | None = None
    step: int | None = None
    tool_calls: int | None = None
    first_token_kind: str | None = None
    tool_name: str | None = None
    response_bytes: int | None = None
    rpc_error_code: int | None = None
    content_tokens: int | None = None
    content_span_ms: float | None = None
    parent_task_id: str | None = None
    replay_late_ms: float | None = None
    recorded_latency_ms: float | None = None
    recorded_tokens_out: int | None = None


@dataclass
class TaskRecord:
    task_id: str
    agent_id: str
    round: int | None = None
    submitted_ts: float | None = None
    started_ts: float | None = None
    finished_ts: float | None = None
    status: str = "unfinished"
    queue_wait_ms: float | None = None
    run_ms: float | None = None
    total_ms: float | None = None
    polls: int = 0
    times_from: str = "client"
    polled_run_ms: float | None = None
    poll_interval_ms: float | None = None
    llm_calls: int | None = None
    tokens_in: int | None = None
    tokens_cached: int | None = None
    tokens_out: int | None = None
    model: str | None = None
    gateway_cost_usd: float | None = None
    worker_pid: int | None = None
    error: str | None = None
    steps: int | None = None
    tool_calls: int | None = None
    end_reason: str | None = None
    tool_ms: float | None = None
    parent_task_id: str | None = None
    children_wait_ms: float | None = None
    recorded_session: str | None = None
    recorded_steps: int | None = None

    def adopt_server_times(self, started_ts: float | None, finished_ts: float | None) -> None:
        """Replace the client's observed start/finish by the gateway's own timestamps (where it gives
        them), keeping the client's run time beside them as polled_run_ms."""
        if started_ts is None and finished_ts is None:
            return
        self.polled_run_ms = _span_ms(self.started_ts, self.finished_ts)
        self.started_ts = started_ts if started_ts is not None else self.started_ts
        self.finished_ts = finished_ts if finished_ts is not None else self.finished_ts
        self.times_from = "gateway"

    def fill_durations(self) -> None:
        """Derive the three durations from whichever timestamps are known."""
        self.queue_wait_ms = _span_ms(self.submitted_ts, self.started_ts)
        self.run_ms = _span_ms(self.started_ts, self.finished_ts)
        self.total_ms = _span_ms(self.submitted_ts, self.finished_ts)


@dataclass
class AgentRecord:
    ts: float
    agent_id: str
    n: int | None = None
    session_id: str | None = None
    event: str = "created"
    ready_ms: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class WorkerLoss:
    """run.json `workers_lost`: a Locust worker a distributed run lost mid-run, missing (no heartbeat for
    3 s: killed, frozen, starved) or quit, and the agents it took with it."""

    worker: str  # Locust's client id (host_uuid)
    index: int | None  # Locust's worker index, as its own log lines name it
    ts: float
    at_s: float  # seconds after the run's start
    agents: int  # agents it ran when last seen
    how: str  # "went missing" or "quit"

    def text(self) -> str:
        name = f"worker {self.index}" if self.index is not None else "a worker"
        return f"{name} ({self.worker}) {self.how} at {self.at_s:.1f} s with {self.agents} agent(s)"

    @classmethod
    def from_json(cls, doc: dict) -> WorkerLoss:
        """From run.json; missing fields read as unknown rather than failing the report."""
        index, at_s, agents = doc.get("index"), doc.get("at_s"), doc.get("agents")
        return cls(
            worker=str(doc.get("worker", "?")),
            index=index if isinstance(index, int) else None,
            ts=float(doc.get("ts") or 0.0),
            at_s=float(at_s) if isinstance(at_s, int | float) else float("nan"),
            agents=agents if isinstance(agents, int) else -1,
            how=str(doc.get("how", "was lost")),
        )


def as_row(record: RequestRecord | TaskRecord | AgentRecord) -> dict:
    """A record as a CSV row dict (booleans as 1/0 so every reader agrees). Its fields are flat values:
    a shallow copy, not dataclasses.asdict's recursive one (a row per request: the load path's cost)."""
    return {k: (int(v) if isinstance(v, bool) else v) for k, v in vars(record).items()}


def _span_ms(start: float | None, end: float | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start) * 1000.0, 3)
