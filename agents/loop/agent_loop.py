"""The agent loop of the chat-shaped agents: send the conversation with the tool schemas, get tool calls
or an answer, run each tool (a wait and a result of sizes drawn from the workload), append the
assistant's calls and the results, send again; until an answer or `max_steps`. One tasks.csv row per task.
With [subagents], one step of each task runs K child loops at once in place of its tools (greenlets of
the agent's own, on its client), each a task with its own row naming its parent; the parent waits for the
last before its next step.

The agent makes each model call (its own protocol, stream reader and row); this module decides the steps,
spells the offer and a step's items for chat completions and the Responses API, and runs the tools. It
must not parse a response (the agents' readers and agents/loop/tool_deltas.py do).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from gevent import GreenletExit
from gevent.pool import Group

from agents.loop.mcp_tools import McpTools, mcp_tools_of
from agents.loop.tool_checks import BadCall, check_calls
from agents.loop.tool_deltas import ToolCall
from agents.wire.request_body import History, SharedParts, as_history
from agents.workload import AgentWorkload, Draw
from contract.records import RequestRecord, TaskRecord
from contract.schema import BAD_TOOL_CALL, BAD_TOOL_CALL_KINDS, REQUEST, TASK_STATUS
from scenarios.ceilings import MAX_CONTEXT_TOKENS
from scenarios.workloads.subagents import SubagentsSection
from scenarios.workloads.synthetic_text import CHARS_PER_WORD, TextPool
from scenarios.workloads.tool_loop import ToolLoop, ToolsSection

END_ANSWER = "answer"
END_MAX_STEPS = "max_steps"
END_ERROR = "error"
FAILED_TOOLS_PAUSE_S = 1.0  # between tasks that cannot run: their tools' MCP session failed
RESULT_TAIL = 0.9999  # the result pool holds twice this quantile of the result size


@dataclass(frozen=True)
class LoopStep:
    """One model call of a task: what the request offers and what its row carries; `verdicts` gets one
    per tool call once the answer is read (check_step), `seen_ids` the task's call ids so far."""

    number: int  # 1-based within the task
    task_id: str
    tools: ToolsSection | None  # None: the call offers what its agent offers itself (a replayed call)
    asked_in: int | None  # step 1: the draw's asked size plus the schemas'; later: None (the loop grew it)
    seen_ids: set[str] = field(default_factory=set)
    verdicts: list[BadCall | None] = field(default_factory=list)
    parent_task_id: str | None = None  # a sub-agent's step: the task that spawned it
    offer: dict[str, Any] | None = None  # the body's tools, tool_choice...: `shared_offer`'s


@dataclass(frozen=True)
class LoopApi:
    """How one API spells the offer (tools, tool_choice...), a task's first messages, and a step's calls
    and results."""

    offer: Callable[[ToolsSection], dict[str, Any]]
    step_items: Callable[[list[ToolCall], list[str]], list[dict]]
    first_items: Callable[[Iterable[dict]], list[dict]]


class LoopingAgent(Protocol):
    """What the loop needs of an agent: its ids, its round, its draws (a sub-agent's own prompt), one model
    call, and a row written."""

    agent_id: str
    round: int | None

    @property
    def run_id(self) -> str: ...

    @property
    def workload(self) -> AgentWorkload: ...

    def tagged_prompt(self) -> str: ...

    def model_call(
        self, draw: Draw, history: list[dict], step: LoopStep | None
    ) -> tuple[RequestRecord, list[ToolCall]]: ...

    def record(self, record: Any) -> None: ...


def chat_offer(tools: ToolsSection) -> dict[str, Any]:
    """Chat completions: `tools` as given, `tool_choice` (a name becomes the function object)."""
    offer: dict[str, Any] = {"tools": list(tools.schemas), "tool_choice": _choice(tools.choice, nested=True)}
    if not tools.parallel:
        offer["parallel_tool_calls"] = False
    return offer


def chat_step_items(calls: list[ToolCall], results: list[str]) -> list[dict]:
    """The assistant message with its tool calls, then one `tool` message per result."""
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ],
    }
    return [
        message,
        *(
            {"role": "tool", "tool_call_id": c.call_id, "content": r}
            for c, r in zip(calls, results, strict=True)
        ),
    ]


def responses_offer(tools: ToolsSection) -> dict[str, Any]:
    """The Responses API: flat function tools, `tool_choice` ({"type": "function", "name"} for a name)."""
    flat = [{"type": "function", **s["function"]} for s in tools.schemas]
    offer: dict[str, Any] = {"tools": flat, "tool_choice": _choice(tools.choice, nested=False)}
    if not tools.parallel:
        offer["parallel_tool_calls"] = False
    return offer


def responses_step_items(calls: list[ToolCall], results: list[str]) -> list[dict]:
    """`function_call` items, then a `function_call_output` per result."""
    made = [
        {"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments}
        for c in calls
    ]
    outputs = [
        {"type": "function_call_output", "call_id": c.call_id, "output": r}
        for c, r in zip(calls, results, strict=True)
    ]
    return made + outputs


def input_items(messages: Iterable[dict]) -> list[dict]:
    """Chat-style messages as Responses input items: `type: message` spelt out (OpenAI infers it; OpenClaw
    refuses an item without it); function-call items as they are."""
    return [m if "type" in m else {"type": "message", **m} for m in messages]


CHAT = LoopApi(chat_offer, chat_step_items, list)
RESPONSES = LoopApi(responses_offer, responses_step_items, input_items)


def shared_offer(api: LoopApi, tools: ToolsSection, parts: SharedParts) -> dict[str, Any]:
    """The offer as `api` spells it, its tool schemas (the bulk of it) encoded once in `parts`: the
    workload's, shared by every agent of the process (a server's MCP tools: its session's)."""
    offer = api.offer(tools)
    return {**offer, "tools": parts.encoded((api, "tools"), lambda: offer["tools"])}


def opening(workload: AgentWorkload, draw: Draw, api: LoopApi) -> list[dict]:
    """A draw's messages as `api` spells a task's first ones. One that starts with the workload's shared
    prefix is a History of that prefix's message as every agent of the process sends it: encoded once
    (the workload's parts), its bytes in each body as they are."""
    system, messages = workload.shared.system, draw.messages
    if system is None or not messages or messages[0] is not system:
        return api.first_items(messages)
    prefix = workload.shared.parts.encoded((api, "prefix"), lambda: api.first_items([system])[0])
    return History.after([prefix], api.first_items(messages[1:]))


def _choice(choice: str, nested: bool) -> str | dict:
    if choice in ("auto", "required", "none"):
        return choice
    return (
        {"type": "function", "function": {"name": choice}} if nested else {"type": "function", "name": choice}
    )


@dataclass(frozen=True)
class TaskPlan:
    """What one task runs: its id, its most steps, its parent (a sub-agent's) and the children one of its
    steps spawns (a top-level task's, with [subagents]; a child spawns none)."""

    task_id: str
    max_steps: int
    parent_task_id: str | None = None
    subagents: SubagentsSection | None = None

    def spawns_at(self, number: int) -> bool:
        return self.subagents is not None and number == self.subagents.at_step


class LoopRunner:
    """One agent's tasks: numbers them, draws each tool run's latency and result size from its own seeded
    stream (a sub-agent from one of its own, seeded by its parent's), and writes each task's row."""

    def __init__(self, loop: ToolLoop, rng: random.Random, calibration: Any) -> None:
        self.loop = loop
        self.rng = rng
        self.calibration = calibration
        self.tasks = itertools.count(1)

    def run_task(self, agent: LoopingAgent, draw: Draw, api: LoopApi) -> TaskRecord:
        """Model calls and tool runs until an answer, an error or max_steps; the task's row recorded."""
        task_id = f"{agent.run_id}-{agent.agent_id}-t{next(self.tasks)}"
        plan = TaskPlan(task_id, self.loop.max_steps, subagents=self.loop.subagents)
        return self.run(agent, draw, api, plan, as_history(opening(agent.workload, draw, api)))

    def run(
        self, agent: LoopingAgent, draw: Draw, api: LoopApi, plan: TaskPlan, history: list[dict]
    ) -> TaskRecord:
        """One task (a top-level one or a sub-agent) from `history`, its row recorded."""
        task = TaskRecord(task_id=plan.task_id, agent_id=agent.agent_id, parent_task_id=plan.parent_task_id)
        task.round, task.submitted_ts = agent.round, time.time()
        task.started_ts = task.submitted_ts
        tally = Tally(task)
        try:
            task.end_reason = self._steps(agent, draw, api, history, tally, plan)
        except GreenletExit:  # the run stopped mid-task: the row says so
            task.status, task.error = TASK_STATUS.unfinished, "the run stopped before the task ended"
            tally.close()
            agent.record(task)
            raise
        task.status = TASK_STATUS.done if task.end_reason == END_ANSWER else TASK_STATUS.failed
        if task.end_reason == END_MAX_STEPS:
            task.error = f"no answer after {plan.max_steps} steps"
        tally.close()
        agent.record(task)
        return task

    def _steps(
        self, agent: LoopingAgent, draw: Draw, api: LoopApi, history: list[dict], tally: Tally, plan: TaskPlan
    ) -> str:
        mcp, tools = self.tools_of(agent)
        if tools is None:
            return self.tools_failed(tally)
        schema_chars = mcp.schema_chars if mcp is not None else self.loop.schema_chars
        offer = shared_offer(api, tools, mcp.parts if mcp is not None else agent.workload.shared.parts)
        seen_ids = set[str]()
        for number in range(1, plan.max_steps + 1):
            asked = self.asked_in(draw, schema_chars) if number == 1 else None
            step = LoopStep(
                number, plan.task_id, tools, asked, seen_ids, parent_task_id=plan.parent_task_id, offer=offer
            )
            record, calls = agent.model_call(draw, history, step)
            tally.add(record, len(calls))
            if number == 1 and draw.sized:
                self.calibration.observe(draw.chars + schema_chars, record.tokens_in)
            replied = record.error_kind in BAD_TOOL_CALL_KINDS and self.loop.replies_to_bad_calls
            if not record.ok and not replied:
                tally.task.error = record.error
                return END_ERROR
            if not calls:
                return END_ANSWER
            verdicts = step.verdicts or [None] * len(calls)
            if replied:
                calls = [
                    _named_call(c, v, number, i) for i, (c, v) in enumerate(zip(calls, verdicts, strict=True))
                ]
            runnable = [c for c, v in zip(calls, verdicts, strict=True) if v is None]
            if runnable and plan.spawns_at(number):
                ran = self.spawn(agent, draw, api, plan, history, tally, len(runnable))
            else:
                ran = self.run_calls(mcp, agent, runnable, tally, number) if runnable else []
            history += api.step_items(calls, results_of(verdicts, ran))
        return END_MAX_STEPS

    def spawn(
        self,
        agent: LoopingAgent,
        draw: Draw,
        api: LoopApi,
        plan: TaskPlan,
        history: list[dict],
        tally: Tally,
        results: int,
    ) -> list[str]:
        """The step's sub-agents, run at once in place of its tools (greenlets of this agent's), the parent
        waiting for the last; each runnable call's result is then a drawn tool result (their report).
        Everything a child draws is drawn here first, in order, so one seed spawns the same children."""
        assert plan.subagents is not None
        children = [
            self.child(agent, draw, api, plan, history, k) for k in range(1, plan.subagents.count + 1)
        ]
        started = time.perf_counter()
        group = Group()
        try:
            for runner, child_draw, child_plan, child_history in children:
                group.spawn(runner.run, agent, child_draw, api, child_plan, child_history)
            group.join(raise_error=True)
        finally:
            group.kill()  # the parent stopped (or a child raised): no child outlives it
            tally.children_ms = (tally.children_ms or 0.0) + (time.perf_counter() - started) * 1000.0
        return [self.result() for _ in range(results)]

    def child(
        self, agent: LoopingAgent, draw: Draw, api: LoopApi, plan: TaskPlan, history: list[dict], k: int
    ) -> tuple[LoopRunner, Draw, TaskPlan, History]:
        """Sub-agent k: its runner (a tool stream of its own), its draw, its plan and where it starts. A
        spawned one starts from the workload's next prompt (a fixed prompt carries the child's name, so
        each is a conversation of its own); a forked one from the history the parent sent this step, its
        brief after it (no size asked: the parent's history is not a draw)."""
        assert plan.subagents is not None
        child_plan = TaskPlan(f"{plan.task_id}-s{k}", self.loop.child_max_steps, parent_task_id=plan.task_id)
        brief = f"[sub-agent {k} of {plan.subagents.count} of task {plan.task_id}]"
        if plan.subagents.forks:
            child_draw = dataclasses.replace(draw, asked_in=None, sized=False)
            part = {"role": "user", "content": f"{brief} Take part {k} of the plan."}
            start = as_history(history).extended(api.first_items([part]))
        else:
            child_draw = agent.workload.next_request(f"{agent.tagged_prompt()} {brief}")
            start = as_history(opening(agent.workload, child_draw, api))
        runner = LoopRunner(self.loop, random.Random(self.rng.random()), self.calibration)
        return runner, child_draw, child_plan, start

    def tools_of(self, agent: Any) -> tuple[McpTools | None, ToolsSection | None]:
        """The tools a task runs: the loop's MCP server's (its session opened on first use; no section
        when it failed), else the loop's own drawn ones."""
        mcp = mcp_tools_of(agent, self.loop.tools) if self.loop.tools.from_mcp else None
        return mcp, (mcp.section if mcp is not None else self.loop.tools)

    def tools_failed(self, tally: Tally) -> str:
        """A task that cannot run: its tools' MCP session failed (its rows say why)."""
        tally.task.error = "the MCP session of the loop's tools failed (see requests.csv)"
        time.sleep(FAILED_TOOLS_PAUSE_S)  # no hot loop of failed tasks at --think-time 0
        return END_ERROR

    def run_calls(
        self, mcp: McpTools | None, agent: Any, calls: list[ToolCall], tally: Tally, step: int
    ) -> list[str]:
        """The calls run: as tools/call on the loop's MCP server, else as drawn waits and results."""
        if mcp is not None:
            return timed_tools(tally, mcp.run, agent, calls, tally.task.task_id, step)
        return self.run_tools(calls, tally)

    def asked_in(self, draw: Draw, schema_chars: int) -> int | None:
        """The first step's asked input: the draw's size plus the schemas' (both the user's choice)."""
        if draw.asked_in is None:
            return None
        return draw.asked_in + round(schema_chars / CHARS_PER_WORD)

    def run_tools(self, calls: list[ToolCall], tally: Tally) -> list[str]:
        """Wait as the tools would take (the slowest, or all in turn), then their results."""
        tools = self.loop.tools
        latencies = [tools.latency.draw(self.rng) for _ in calls]
        wait = max(latencies) if tools.concurrent else sum(latencies)
        started = time.perf_counter()
        time.sleep(wait)
        tally.tool_ms += (time.perf_counter() - started) * 1000.0
        return [self.result() for _ in calls]

    def result(self) -> str:
        """A tool result of a drawn size in the gateway's tokens (the load generator's calibration)."""
        result_tokens = self.loop.tools.result_tokens
        tokens = min(result_tokens.draw(self.rng), MAX_CONTEXT_TOKENS)
        chars = round(tokens * self.calibration.chars_per_token)
        pool = result_pool(_pool_chars(result_tokens))
        return pool.slice(self.rng.randrange(len(pool)), chars).strip()


@dataclass
class Tally:
    """A task's sums over its steps: tokens, the gateway's cost, tool calls and time."""

    task: TaskRecord
    tool_ms: float = 0.0
    children_ms: float | None = None  # the wait for sub-agents (None: the task spawned none)

    def __post_init__(self) -> None:
        self.task.steps = self.task.tool_calls = self.task.llm_calls = 0

    def add(self, record: RequestRecord, calls: int) -> None:
        """One step: `calls` are the client's to run; the row's tool_calls also counts those the gateway
        said it ran itself (agents/gateways/gateway_events.py)."""
        task = self.task
        task.steps = (task.steps or 0) + 1
        task.llm_calls = task.steps
        task.tool_calls = (task.tool_calls or 0) + (calls if record.tool_calls is None else record.tool_calls)
        task.model = task.model or record.model
        for name in (REQUEST.tokens_in, REQUEST.tokens_cached, REQUEST.tokens_out, REQUEST.gateway_cost_usd):
            value = getattr(record, name)
            if value is not None:
                setattr(task, name, (getattr(task, name) or 0) + value)

    def close(self) -> None:
        self.task.finished_ts = time.time()
        self.task.tool_ms = round(self.tool_ms, 3)
        if self.children_ms is not None:
            self.task.children_wait_ms = round(self.children_ms, 3)
        self.task.fill_durations()


def timed_tools(tally: Tally, run: Callable[..., list[str]], *args: Any) -> list[str]:
    """Tools run for real (an MCP server's tools/call): their time is the task's tool time."""
    started = time.perf_counter()
    try:
        return run(*args)
    finally:
        tally.tool_ms += (time.perf_counter() - started) * 1000.0


def loop_runner_of(agent: Any, loop: ToolLoop) -> LoopRunner:
    """The agent's runner (made on its first task)."""
    runner = agent.loop_runner
    if runner is None or runner.loop is not loop:
        workload = agent.workload
        rng = random.Random(f"{agent.settings.workload.seed}/{workload.stream}/tools")
        runner = agent.loop_runner = LoopRunner(loop, rng, workload.calibration)
    return runner


@functools.lru_cache(maxsize=4)
def result_pool(chars: int) -> TextPool:
    """The text tool results are cut from, made once per size (tens of ms)."""
    return TextPool("loadkit/tool-results", chars)


def _pool_chars(result_tokens) -> int:
    upper = min(result_tokens.high or result_tokens.quantile(RESULT_TAIL), MAX_CONTEXT_TOKENS)
    return int(2 * upper * CHARS_PER_WORD) + 1


def check_step(record: RequestRecord, calls: list[ToolCall], step: LoopStep | None) -> None:
    """An answered step's tool calls checked as an agent would (agents/loop/tool_checks.py): a call it cannot
    run fails the step, its row naming the first problem's error_kind and how many calls had one."""
    if step is None or step.tools is None or not record.ok or not calls:
        return  # a replayed call (no tools of the kit's) sends the recorded history, not these calls
    step.verdicts[:] = check_calls(calls, step.tools.schemas, step.seen_ids)
    bad = [v for v in step.verdicts if v is not None]
    if bad:
        more = f" (and {len(bad) - 1} more of {len(calls)} calls)" if len(bad) > 1 else ""
        record.ok, record.error_kind, record.error = False, bad[0].kind, bad[0].message + more


def results_of(verdicts: list[BadCall | None], ran: list[str]) -> list[str]:
    """Each call's result: the runnable calls' in turn (`ran`), each bad call's error in its place: what an
    agent that replies to a bad call sends back."""
    results = iter(ran)
    return [f"error: {v.message}" if v else next(results) for v in verdicts]


def _named_call(call: ToolCall, verdict: BadCall | None, step: int, index: int) -> ToolCall:
    """A call as a replying agent echoes it: one without an id, or with an id used before, gets one of
    its own, so its error result can name it."""
    if verdict is None or verdict.kind not in _ID_KINDS:
        return call
    return ToolCall(f"loadkit-s{step}-c{index}", call.name, call.arguments)


_ID_KINDS = (BAD_TOOL_CALL.tool_call_no_id, BAD_TOOL_CALL.tool_call_duplicate_id)


def step_fields(record: RequestRecord, step: LoopStep | None) -> None:
    """A request row's loop fields: its step and task, the asked size of a loop's first step."""
    if step is None:
        return
    record.step, record.task_id, record.parent_task_id = step.number, step.task_id, step.parent_task_id
    record.asked_tokens_in = step.asked_in


def first_token(record: RequestRecord, kind: str | None) -> None:
    """Which token a stream's TTFT was timed to (content or a tool call): the first one seen."""
    if kind and record.first_token_kind is None:
        record.first_token_kind = kind
