"""An LLM-free LangGraph graph for the kit's integration tests: one node that sleeps and echoes.

It must stay free of model calls and network access: the dev server runs it offline on loopback.
"""

from __future__ import annotations

import asyncio
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    prompt: str
    work_s: float
    answer: str


async def work(state: State) -> State:
    """Holds a worker slot for `work_s` seconds so queueing is observable."""
    await asyncio.sleep(float(state.get("work_s", 0.2)))
    return {"answer": f"echo: {state.get('prompt', '')}"}


builder = StateGraph(State)
builder.add_node("work", work)
builder.add_edge(START, "work")
builder.add_edge("work", END)
graph = builder.compile()
