"""Any REST gateway by a spec file (TOML): request templates for create / prompt / poll / close and JSON
paths for the id, status, terminal states, timestamps and usage, so users map a gateway without Python;
a [capacity] section describes its idle sessions for the capacity and churn profiles (docs/capacity.md).

Loading validates the whole file and fails with one line naming the file and key. The agent closes only
what it created itself; templates should tag what they create with `{run_id}`.
"""

from __future__ import annotations

import functools
import re
import time
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from locust import constant, task
from locust.exception import StopUser

from agents.base import KitAgent, paced, thinking
from agents.run_context import context_of
from agents.wire.target_origin import header_problem
from contract import exit_codes
from contract.errors import InputError
from contract.records import TaskRecord
from contract.schema import TASK
from contract.templates import fill
from contract.textfile import read_text

STEPS = ("create", "prompt", "poll", "close")
KIT_STATUSES = ("done", "failed", "cancelled")
ROW_FIELDS = (
    TASK.submitted_ts,
    TASK.started_ts,
    TASK.finished_ts,
    "worker_pid",
    "model",
    "error",
    TASK.llm_calls,
    TASK.tokens_in,
    TASK.tokens_cached,
    TASK.tokens_out,
    TASK.gateway_cost_usd,
)
TIME_FIELDS = (TASK.submitted_ts, TASK.started_ts, TASK.finished_ts)
_PLACEHOLDER = re.compile(r"\{(run_id|agent_id|session|prompt|model|id|n|uuid|assistant_id|a2a_path)\}")
CAPACITY_KEYS = ("create", "then", "ready", "prompt", "close", "error")
SHOWN_KEYS, KEY_CHARS = 12, 40  # a reply's top-level keys named when an id path finds nothing


class SpecError(InputError):
    """A spec file that cannot be used; the message is one line naming the file and the key."""


@dataclass(frozen=True)
class RequestTemplate:
    """One HTTP request with `{placeholders}` in path, body and headers."""

    operation: str
    method: str
    path: str
    body: object = None
    headers: dict[str, str] = field(default_factory=dict)
    id_path: str | None = None  # where the reply carries the id to poll/close (create; optional on prompt)


@dataclass(frozen=True)
class ReadyCheck:
    """Polled after create until the status at `status_path` is one of `ready` (or one of `failed`)."""

    request: RequestTemplate
    status_path: str
    ready: tuple[str, ...]
    failed: tuple[str, ...] = ()


@dataclass(frozen=True)
class SessionSteps:
    """How to open one idle agent session over HTTP, know it is ready, prompt it once and close it.

    `create[0]` answers with the id (at its `id_path`); later create steps run in order with `{id}`
    (e.g. a first message that makes the gateway materialise the session). A 2xx reply that carries
    `error_path` failed (JSON-RPC errors arrive with HTTP 200)."""

    create: tuple[RequestTemplate, ...]
    close: RequestTemplate | None  # None: the gateway offers no way to close one (churn refuses)
    ready: ReadyCheck | None = None
    prompt: RequestTemplate | None = None
    error_path: str | None = None

    def uses(self, placeholder: str) -> bool:
        """Whether any step (path, body, headers) names `{placeholder}`: every text of the frozen steps
        is in their repr."""
        return "{" + placeholder + "}" in repr(self)


@dataclass(frozen=True)
class Spec:
    name: str
    create: RequestTemplate | None
    poll: RequestTemplate | None
    status_path: str
    terminal: dict[str, str]  # gateway status -> kit status (done, failed, cancelled)
    prompt: RequestTemplate | None = None
    close: RequestTemplate | None = None
    fields: dict[str, str] = field(default_factory=dict)  # task row column -> JSON path
    capacity: SessionSteps | None = None  # the [capacity] section, for the capacity/churn profiles


def json_path(doc: object, dotted: str) -> object:
    """`usage.prompt_tokens` -> doc["usage"]["prompt_tokens"]; list indices allowed; None when absent."""
    node = doc
    for part in dotted.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def id_not_found(template: RequestTemplate, reply: object) -> str:
    """One line naming a step's id path that found nothing in a reply, and the reply's top-level keys
    (the first few, each cut short: a hostile reply may be large)."""
    if isinstance(reply, dict):
        keys = [str(key)[:KEY_CHARS] for key in list(reply)[:SHOWN_KEYS]]
        shown = ", ".join(keys) + (", ..." if len(reply) > SHOWN_KEYS else "") if keys else "none"
    else:
        shown = f"none (a JSON {type(reply).__name__})"
    return (
        f"spec: {template.operation} id = {template.id_path!r} finds nothing in the reply to "
        f"{template.method} {template.path} (its top-level keys: {shown})"
    )


def render(template: object, values: dict[str, str]) -> object:
    """Fill placeholders in every string of a template (nested dicts and lists too)."""
    return fill(template, values, _PLACEHOLDER)


@functools.lru_cache(maxsize=16)
def load_spec(path: str) -> Spec:
    """Read and validate a spec file (cached: every simulated agent shares one parse)."""
    try:
        doc = tomllib.loads(read_text(path, SpecError, "spec"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"spec {path}: not valid TOML ({exc})") from exc
    return parse_spec(doc, path)


def parse_spec(doc: dict, origin: str = "<spec>") -> Spec:
    """A spec has task steps ([create] and [poll]), a [capacity] section, or both."""
    unknown = set(doc) - {"name", "fields", "capacity", *STEPS}
    if unknown:
        raise SpecError(f"spec {origin}: unknown section(s) {sorted(unknown)}")
    capacity = parse_capacity(doc["capacity"], origin) if "capacity" in doc else None
    if capacity is not None and "create" not in doc and "poll" not in doc:
        return Spec(
            name=_name(doc, origin), create=None, poll=None, status_path="", terminal={}, capacity=capacity
        )
    for required in ("create", "poll"):
        if not isinstance(doc.get(required), dict):
            raise SpecError(f"spec {origin}: missing [{required}] section")
    poll = doc["poll"]
    if not isinstance(doc["create"].get("id"), str):
        raise SpecError(f'spec {origin}: [create] needs id = "json.path" to the created thing\'s id')
    if not isinstance(poll.get("status"), str):
        raise SpecError(f'spec {origin}: [poll] needs status = "json.path" to the status')
    fields = doc.get("fields") or {}
    wrong = set(fields) - set(ROW_FIELDS)
    if wrong:
        raise SpecError(f"spec {origin}: [fields] has unknown column(s) {sorted(wrong)}; known: {ROW_FIELDS}")
    return Spec(
        name=_name(doc, origin),
        create=_template(doc, "create", origin),
        poll=_template(doc, "poll", origin),
        status_path=poll["status"],
        terminal=_terminal(poll.get("terminal"), origin),
        prompt=_template(doc, "prompt", origin) if "prompt" in doc else None,
        close=_template(doc, "close", origin) if "close" in doc else None,
        fields={str(k): str(v) for k, v in fields.items()},
        capacity=capacity,
    )


def _name(doc: dict, origin: str) -> str:
    return str(doc.get("name") or Path(origin).stem)


def parse_capacity(section: object, origin: str) -> SessionSteps:
    """[capacity]: create (+ then = [...]), ready (optional poll), prompt (churn), close, error."""
    where = f"{origin} [capacity]"
    if not isinstance(section, dict):
        raise SpecError(f"spec {origin}: [capacity] must be a table")
    unknown = set(section) - set(CAPACITY_KEYS)
    if unknown:
        raise SpecError(f"spec {where}: unknown key(s) {sorted(unknown)}; known: {CAPACITY_KEYS}")
    if not isinstance(section.get("create"), dict):
        raise SpecError(f"spec {where}: missing [capacity.create]")
    create = _template(section, "create", where, "capacity.create")
    if not create.id_path:
        raise SpecError(f'spec {where}: [capacity.create] needs id = "json.path" to the session id')
    then = section.get("then") or []
    if not isinstance(then, list) or not all(isinstance(step, dict) for step in then):
        raise SpecError(f"spec {where}: then must be an array of tables ([[capacity.then]])")
    steps = [_template({"then": step}, "then", where, "capacity.then") for step in then]
    return SessionSteps(
        create=(create, *steps),
        close=_template(section, "close", where, "capacity.close", "DELETE") if "close" in section else None,
        ready=_ready(section["ready"], where) if "ready" in section else None,
        prompt=_template(section, "prompt", where, "capacity.prompt") if "prompt" in section else None,
        error_path=str(section["error"]) if section.get("error") else None,
    )


def _ready(entry: object, where: str) -> ReadyCheck:
    if not isinstance(entry, dict) or not isinstance(entry.get("status"), str):
        raise SpecError(f'spec {where}: [capacity.ready] needs status = "json.path" and ready = [...]')
    ready, failed = entry.get("ready"), entry.get("failed") or []
    if not isinstance(ready, list) or not ready or not isinstance(failed, list):
        raise SpecError(f"spec {where}: [capacity.ready] needs ready = [values] (and failed = [values])")
    return ReadyCheck(
        request=_template({"ready": entry}, "ready", where, "capacity.ready", default_method="GET"),
        status_path=entry["status"],
        ready=tuple(str(v) for v in ready),
        failed=tuple(str(v) for v in failed),
    )


def _template(
    doc: dict, step: str, origin: str, label: str | None = None, default_method: str | None = None
) -> RequestTemplate:
    entry = doc[step]
    where = f"spec {origin}: [{label or step}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        raise SpecError(f'{where} needs path = "/..."')
    path, headers = entry["path"], entry.get("headers") or {}
    if not path.startswith("/") or path.startswith("//"):  # a URL or //host would leave --host
        raise SpecError(
            f'{where} path = {path!r}: a path on --host, starting with one "/" (no scheme or host)'
        )
    if not isinstance(headers, dict):
        raise SpecError(f'{where} headers must be a table, e.g. headers = {{ X-Tag = "{{run_id}}" }}')
    for name, value in headers.items():
        if problem := header_problem(str(name), str(value)):
            raise SpecError(f"{where} headers: {problem}")
    method = default_method or ("GET" if step == "poll" else "POST")
    operation = f"session.{label.removeprefix('capacity.')}" if label else f"spec.{step}"
    return RequestTemplate(
        operation=str(entry.get("operation") or operation),
        method=str(entry.get("method") or method).upper(),
        path=path,
        body=entry.get("body"),
        headers={str(k): str(v) for k, v in headers.items()},
        id_path=entry.get("id"),
    )


def _terminal(table: object, origin: str) -> dict[str, str]:
    if not isinstance(table, dict) or not table:
        raise SpecError(f"spec {origin}: [poll.terminal] needs done = [...] (and failed, cancelled)")
    mapping = {}
    for kit_status, values in table.items():
        if kit_status not in KIT_STATUSES or not isinstance(values, list):
            raise SpecError(f'spec {origin}: [poll.terminal] {kit_status!r}: use {KIT_STATUSES} = ["..."]')
        mapping.update({str(value): kit_status for value in values})
    return mapping


def apply_reply(row: TaskRecord, spec: Spec, reply: dict) -> None:
    """Copy the mapped fields and the status (when terminal) from a gateway reply into the row."""
    for column, path in spec.fields.items():
        value = json_path(reply, path)
        if value is not None:
            setattr(row, column, epoch(value) if column in TIME_FIELDS else value)
    status = json_path(reply, spec.status_path)
    row.status = spec.terminal.get(str(status), row.status)


def epoch(value: object) -> float | None:
    """Epoch seconds as given, or parsed from an ISO 8601 string."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return None


class SpecAgent(KitAgent):
    """Creates, optionally prompts, and polls one thing at a time, as the spec file (`--spec-file`) says."""

    weight = 1
    task_agent = True  # rounds run only agents that work tasks
    wait_time = thinking(constant(0.5))

    def on_start(self) -> None:
        super().on_start()
        self.spec = load_spec(self.settings.spec_file or "")
        self.created: list[str] = []
        if self.spec.create is None:
            raise StopUser("the spec file has no [create]/[poll]: only capacity and churn can use it")

    def on_stop(self) -> None:
        if self.spec.close is not None and self.settings.cleanup:
            for thing_id in self.created:
                self.send(self.spec.close, thing_id)
        super().on_stop()

    @task
    @paced
    def create_and_wait(self) -> None:
        self.run_task(round_no=self.round)

    def run_task(self, round_no: int | None) -> TaskRecord | None:
        if self.spec.create is None:  # a capacity-only spec: refused at on_start
            return None
        if context_of(self.environment).spec_matched is False:  # the spec did not match: create nothing more
            raise StopUser("the spec's [create] id path found nothing")
        draw = self.workload.next_request(self.settings.prompt or "Do a small task.", self.arrival)
        prompt, asked = draw.text, draw.asked(sends_max_tokens=False)
        row = self.submitted(lambda: self.create(round_no, prompt, asked))
        if row is None:
            return None
        thing_id = row.task_id
        if self.spec.prompt is not None:
            answer = self.send(self.spec.prompt, thing_id, prompt, asked)
            new_id = (
                json_path(answer, self.spec.prompt.id_path) if answer and self.spec.prompt.id_path else None
            )
            row.task_id = str(new_id) if new_id is not None else row.task_id
        self.poll_task(row, self.poll_once)
        row.fill_durations()
        self.record(row)
        return row

    def create(self, round_no: int | None, prompt: str, asked: dict) -> TaskRecord | None:
        """[create] sent; the thing's id (remembered for cleanup) and what the reply says of it, as a row."""
        create = self.spec.create
        assert create is not None  # run_task's caller checked
        submitted = time.time()
        reply = self.send(create, None, prompt, asked)
        if reply is None:
            return None
        thing_id = json_path(reply, create.id_path or "")
        if thing_id is None:
            self.id_path_missed(create, reply)
            return None
        context_of(self.environment).spec_matched = True
        self.created.append(str(thing_id))
        row = TaskRecord(
            task_id=str(thing_id), agent_id=self.agent_id, round=round_no, submitted_ts=submitted
        )
        apply_reply(row, self.spec, reply)
        return row

    def id_path_missed(self, create: RequestTemplate, reply: dict) -> None:
        """Before any reply has carried an id, one that does not means the spec does not fit the gateway:
        the run stops as bad input (exit 2) and no agent creates more; this agent closes what it made.
        After the spec has matched, a reply without an id is the gateway's fault: no task row."""
        context = context_of(self.environment)
        if context.spec_matched:
            return
        context.spec_matched = False
        message = id_not_found(create, reply)
        link = context.link
        if link is not None:
            link.request_stop(message, exit_codes.BAD_INPUT)
        raise StopUser(message)

    def poll_once(self, row: TaskRecord) -> None:
        if self.spec.poll is None:
            return
        reply = self.send(self.spec.poll, row.task_id)
        if reply is not None:
            apply_reply(row, self.spec, reply)

    def send(
        self,
        template: RequestTemplate,
        thing_id: str | None,
        prompt: str | None = None,
        asked: dict | None = None,
    ) -> dict | None:
        """One templated request; `prompt` (the task's draw) fills {prompt}, and a request that carries
        it records the sizes `asked`."""
        values = {
            "run_id": self.run_id,
            "agent_id": self.agent_id,
            "session": f"{self.run_id}-{self.agent_id}",
            "prompt": self.settings.prompt or "Do a small task." if prompt is None else prompt,
            "model": self.settings.model,
            "id": thing_id or "",
        }
        kwargs: dict[str, Any] = {"headers": render(template.headers, values)} if template.headers else {}
        if template.body is not None:
            kwargs["json"] = render(template.body, values)
        path = str(render(template.path, values))
        ids: dict[str, Any] = {"task_id": thing_id}
        if asked and "{prompt}" in repr(template):
            ids.update(asked)
        body, _ = self.json_call(template.operation, template.method, path, ids=ids, **kwargs)
        return body
