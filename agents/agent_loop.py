"""The agent loop of the chat-shaped agents: send the conversation with the tool schemas, get tool calls
or an answer, run each tool (a wait and a result of sizes drawn from the workload), append the
assistant's calls and the results, send again; until an answer or `max_steps`. One tasks.csv row per task.

The agent makes each model call (its own protocol, stream reader and row); this module decides the steps,
spells the offer and a step's items for chat completions and the Responses API, and runs the tools. It
must not parse a response (the agents' readers and agents/tool_deltas.py do).
"""

from __future__ import annotations

import functools
import itertools
import random
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gevent import GreenletExit

from agents.tool_deltas import ToolCall
from agents.workload import Draw
from contract.records import RequestRecord, TaskRecord
from contract.schema import REQUEST, TASK_STATUS
from scenarios.synthetic_text import CHARS_PER_WORD, TextPool
from scenarios.tool_loop import ToolLoop, ToolsSection

END_ANSWER = "answer"
END_MAX_STEPS = "max_steps"
END_ERROR = "error"
RESULT_TAIL = 0.9999  # the result pool holds twice this quantile of the result size


@dataclass(frozen=True)
class LoopStep:
    """One model call of a task: what the request offers and what its row carries."""

    number: int  # 1-based within the task
    task_id: str
    tools: ToolsSection
    asked_in: int | None  # step 1: the draw's asked size plus the schemas'; later: None (the loop grew it)


@dataclass(frozen=True)
class LoopApi:
    """How one API spells the offer (tools, tool_choice...) and a step's calls and results."""

    offer: Callable[[ToolsSection], dict[str, Any]]
    step_items: Callable[[list[ToolCall], list[str]], list[dict]]


class LoopingAgent(Protocol):
    """What the loop needs of an agent: its ids, its round, one model call, and a row written."""

    agent_id: str
    round: int | None

    @property
    def run_id(self) -> str: ...

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


CHAT = LoopApi(chat_offer, chat_step_items)
RESPONSES = LoopApi(responses_offer, responses_step_items)


def _choice(choice: str, nested: bool) -> str | dict:
    if choice in ("auto", "required", "none"):
        return choice
    return (
        {"type": "function", "function": {"name": choice}} if nested else {"type": "function", "name": choice}
    )


class LoopRunner:
    """One agent's tasks: numbers them, draws each tool run's latency and result size from its own seeded
    stream, and writes each task's row."""

    def __init__(self, agent: Any, loop: ToolLoop) -> None:
        self.loop = loop
        workload = agent.workload
        self.rng = random.Random(f"{agent.settings.workload.seed}/{workload.stream}/tools")
        self.calibration = workload.calibration
        self.tasks = itertools.count(1)

    def run_task(self, agent: LoopingAgent, draw: Draw, api: LoopApi) -> TaskRecord:
        """Model calls and tool runs until an answer, an error or max_steps; the task's row recorded."""
        task = TaskRecord(
            task_id=f"{agent.run_id}-{agent.agent_id}-t{next(self.tasks)}", agent_id=agent.agent_id
        )
        task.round, task.submitted_ts = agent.round, time.time()
        task.started_ts = task.submitted_ts
        tally = Tally(task)
        history = list(draw.messages)
        try:
            task.end_reason = self._steps(agent, draw, api, history, tally)
        except GreenletExit:  # the run stopped mid-task: the row says so
            task.status, task.error = TASK_STATUS.unfinished, "the run stopped before the task ended"
            tally.close()
            agent.record(task)
            raise
        task.status = TASK_STATUS.done if task.end_reason == END_ANSWER else TASK_STATUS.failed
        if task.end_reason == END_MAX_STEPS:
            task.error = f"no answer after {self.loop.max_steps} steps"
        tally.close()
        agent.record(task)
        return task

    def _steps(self, agent: LoopingAgent, draw: Draw, api: LoopApi, history: list[dict], tally: Tally) -> str:
        tools = self.loop.tools
        for number in range(1, self.loop.max_steps + 1):
            step = LoopStep(number, tally.task.task_id, tools, self.asked_in(draw) if number == 1 else None)
            record, calls = agent.model_call(draw, history, step)
            tally.add(record, len(calls))
            if number == 1 and draw.sized:
                self.calibration.observe(draw.chars + self.loop.schema_chars, record.tokens_in)
            if not record.ok:
                tally.task.error = record.error
                return END_ERROR
            if not calls:
                return END_ANSWER
            history += api.step_items(calls, self.run_tools(calls, tally))
        return END_MAX_STEPS

    def asked_in(self, draw: Draw) -> int | None:
        """The first step's asked input: the draw's size plus the schemas' (both the user's choice)."""
        if draw.asked_in is None:
            return None
        return draw.asked_in + round(self.loop.schema_chars / CHARS_PER_WORD)

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
        chars = round(result_tokens.draw(self.rng) * self.calibration.chars_per_token)
        pool = result_pool(_pool_chars(result_tokens))
        return pool.slice(self.rng.randrange(len(pool)), chars).strip()


@dataclass
class Tally:
    """A task's sums over its steps: tokens, the gateway's cost, tool calls and time."""

    task: TaskRecord
    tool_ms: float = 0.0

    def __post_init__(self) -> None:
        self.task.steps = self.task.tool_calls = self.task.llm_calls = 0

    def add(self, record: RequestRecord, calls: int) -> None:
        task = self.task
        task.steps = (task.steps or 0) + 1
        task.llm_calls = task.steps
        task.tool_calls = (task.tool_calls or 0) + calls
        task.model = task.model or record.model
        for name in (REQUEST.tokens_in, REQUEST.tokens_cached, REQUEST.tokens_out, REQUEST.gateway_cost_usd):
            value = getattr(record, name)
            if value is not None:
                setattr(task, name, (getattr(task, name) or 0) + value)

    def close(self) -> None:
        self.task.finished_ts = time.time()
        self.task.tool_ms = round(self.tool_ms, 3)
        self.task.fill_durations()


_RUNNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def loop_runner_of(agent: Any, loop: ToolLoop) -> LoopRunner:
    """The agent's runner (made on its first task)."""
    runner = _RUNNERS.get(agent)
    if runner is None or runner.loop is not loop:
        runner = _RUNNERS[agent] = LoopRunner(agent, loop)
    return runner


@functools.lru_cache(maxsize=4)
def result_pool(chars: int) -> TextPool:
    """The text tool results are cut from, made once per size (tens of ms)."""
    return TextPool("loadkit/tool-results", chars)


def _pool_chars(result_tokens) -> int:
    upper = result_tokens.high or result_tokens.quantile(RESULT_TAIL)
    return int(2 * upper * CHARS_PER_WORD) + 1


def step_fields(record: RequestRecord, step: LoopStep | None) -> None:
    """A request row's loop fields: its step and task, the asked size of a loop's first step."""
    if step is None:
        return
    record.step, record.task_id = step.number, step.task_id
    record.asked_tokens_in = step.asked_in


def first_token(record: RequestRecord, kind: str | None) -> None:
    """Which token a stream's TTFT was timed to (content or a tool call): the first one seen."""
    if kind and record.first_token_kind is None:
        record.first_token_kind = kind
