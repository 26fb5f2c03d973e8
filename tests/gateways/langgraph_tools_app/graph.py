"""An LLM-free LangGraph tool loop for the kit's integration tests: a scripted model node that asks for
the `lookup` tool `tool_calls` times (the run's input), one call per step, then answers; the prebuilt
ToolNode runs each call. Offline: no model, no network."""

from __future__ import annotations

from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    tool_calls: int


@tool
def lookup(query: str) -> str:
    """Looks nothing up: returns its query."""
    return f"found {query}"


def model(state: State) -> State:
    """Calls `lookup` until this turn has run `tool_calls` of them, then answers."""
    turn = []
    for message in reversed(state.get("messages", [])):
        if message.type == "human":
            break
        turn.append(message)
    ran = sum(isinstance(m, ToolMessage) for m in turn)
    if ran < int(state.get("tool_calls", 0)):
        call = {"name": "lookup", "args": {"query": f"q{ran}"}, "id": f"call-{ran}", "type": "tool_call"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}
    return {"messages": [AIMessage(content=f"done after {ran} tools")]}


def route(state: State) -> str:
    return "tools" if state["messages"][-1].tool_calls else END


builder = StateGraph(State)
builder.add_node("model", model)
builder.add_node("tools", ToolNode([lookup]))
builder.add_edge(START, "model")
builder.add_conditional_edges("model", route, ["tools", END])
builder.add_edge("tools", "model")
graph = builder.compile()
