"""The scripted model's decisions, without a server: steps counted from the conversation, tools picked by
name, arguments made up to match their schema, scripts loaded and matched, prompt text that covers the
tool schemas and the whole history."""

from __future__ import annotations

import json

import pytest

from simgateway.conversation import chat_conversation, responses_conversation
from simgateway.knobs import Knobs, parse_knobs
from simgateway.script import ScriptError, load_script
from simgateway.scripted import made_up, plan_calls

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1, "maximum": 3},
        "unit": {"type": "string", "enum": ["C", "F"]},
        "hourly": {"type": ["boolean", "null"]},
        "spots": {"type": "array", "minItems": 2, "items": {"type": "object", "properties": {"x": {}}}},
    },
}
TOOLS = [
    {"type": "function", "function": {"name": "weather", "parameters": WEATHER}},
    {
        "type": "function",
        "function": {"name": "search", "parameters": {"properties": {"q": {"type": "string"}}}},
    },
]


def chat(*history: dict, **extra) -> dict:
    return {"messages": [{"role": "user", "content": "plan my trip"}, *history], "tools": TOOLS, **extra}


def calls_turn(*names: str) -> list[dict]:
    """An assistant step calling `names`, with a result for each."""
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}
        for i, n in enumerate(names)
    ]
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *results]


def test_step_is_one_plus_the_assistant_tool_call_messages_since_its_last_text_answer():
    assert chat_conversation(chat()).step == 1
    injected = {"role": "user", "content": "gateway context"}  # OpenClaw adds one after tool results
    two_steps = chat(*calls_turn("weather", "search"), injected, *calls_turn("search"))
    conv = chat_conversation(two_steps)
    assert conv.step == 3 and conv.called == ("weather", "search", "search")
    assert conv.turn_user == "plan my trip"  # the turn's opener, not the gateway's context after it
    new_turn = chat(
        *calls_turn("weather"), {"role": "assistant", "content": "done"}, {"role": "user", "content": "again"}
    )
    assert chat_conversation(new_turn).step == 1 and chat_conversation(new_turn).called == ()
    assert chat_conversation(new_turn).first_user == "plan my trip"
    assert chat_conversation(new_turn).turn_user == "again"  # a gateway's own prompt opens its own turn


def test_responses_steps_count_runs_of_function_calls():
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "function_call", "call_id": "a", "name": "weather", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "x"},
        {"type": "function_call_output", "call_id": "b", "output": "y"},
        {"type": "function_call", "call_id": "c", "name": "search", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "z"},
    ]
    tools = [{"type": "function", "name": "weather", "parameters": WEATHER}]
    conv = responses_conversation({"instructions": "be brief", "input": items, "tools": tools})
    assert conv.step == 3 and conv.first_user == "go" and list(conv.offered) == ["weather"]
    assert "be brief" in conv.said and conv.texts[0] == json.dumps(tools, separators=(",", ":"))
    assert conv.last_results == ("z",)  # the results of its last step only


def test_last_results_are_those_after_the_last_assistant_message():
    step = calls_turn("weather", "search")
    step[1]["content"], step[2]["content"] = "sunny", [{"type": "text", "text": "found"}]
    assert chat_conversation(chat(*step)).last_results == ("sunny", "found")
    answered = chat(*step, {"role": "assistant", "content": "done"}, {"role": "user", "content": "more"})
    assert chat_conversation(answered).last_results == ()
    assert chat_conversation(chat(*calls_turn("weather"), *step)).last_results == ("sunny", "found")


def test_prompt_texts_cover_history_tool_calls_results_and_schemas():
    body = chat(*calls_turn("weather"))
    texts = chat_conversation(body).texts
    assert texts == (json.dumps(TOOLS, separators=(",", ":")), "plan my trip", "weather", "{}", "ok")
    plain = chat_conversation({"messages": [{"role": "user", "content": "x" * 40}]})
    assert plain.texts == ("x" * 40,), "no tools, no history: the count is the message text alone"


def test_calls_for_the_first_n_steps_then_text_naming_tools_in_turn():
    knobs = Knobs(tool_call_steps=2, tool_calls_per_step=3)
    first = plan_calls(knobs, chat_conversation(chat()))
    assert [c.name for c in first] == ["weather", "search", "weather"]
    second = plan_calls(knobs, chat_conversation(chat(*calls_turn("weather", "search", "weather"))))
    assert [c.name for c in second] == ["search", "weather", "search"]
    third = chat(*calls_turn("weather", "search", "weather"), *calls_turn("search", "weather", "search"))
    assert plan_calls(knobs, chat_conversation(third)) == ()
    assert len({c.arguments for c in first}) == 3, "parallel calls of one step carry distinct arguments"


def test_tool_choice_parallel_flag_and_tool_names_are_honoured():
    knobs = Knobs(tool_call_steps=1, tool_calls_per_step=2)
    assert plan_calls(knobs, chat_conversation(chat(tool_choice="none"))) == ()
    assert len(plan_calls(knobs, chat_conversation(chat(parallel_tool_calls=False)))) == 1
    forced = {"type": "function", "function": {"name": "search"}}
    late = chat(*calls_turn("weather"), *calls_turn("weather"), tool_choice=forced)
    assert [c.name for c in plan_calls(knobs, chat_conversation(late))] == ["search", "search"]
    assert len(plan_calls(knobs, chat_conversation(chat(*calls_turn("x"), tool_choice="required")))) == 2
    named = Knobs(tool_call_steps=1, tool_names=("search", "absent"))
    assert [c.name for c in plan_calls(named, chat_conversation(chat()))] == ["search"]
    assert plan_calls(Knobs(tool_call_steps=1, tool_names=("absent",)), chat_conversation(chat())) == ()
    assert plan_calls(Knobs(tool_call_steps=5), chat_conversation({"messages": [{"role": "user"}]})) == ()


def test_made_up_arguments_match_the_schema():
    value = made_up(WEATHER, 0)
    assert value["city"] in ("lorem", "ipsum", "dolor", "sit", "amet") and value["unit"] == "C"
    assert value["days"] == 2 and isinstance(value["hourly"], bool) and len(value["spots"]) == 2
    assert made_up(WEATHER, 9)["days"] == 3, "capped at the maximum"
    deep: dict = {"type": "object", "properties": {}}
    node = deep
    for _ in range(10):
        node["properties"]["n"] = {"type": "object", "properties": {}}
        node = node["properties"]["n"]
    assert json.dumps(made_up(deep, 0)).count("{") <= 6, "nesting is bounded"


def write(tmp_path, text: str) -> str:
    path = tmp_path / "script.toml"
    path.write_text(text)
    return str(path)


def test_a_script_rule_calls_its_tool_once_with_captured_arguments_then_text(tmp_path):
    rule = 'offers = "search"\nsays = "trip to (?P<city>\\\\w+)"\narguments = {q = "flights {city}"}\n'
    path = write(tmp_path, "[[rule]]\n" + rule)
    knobs = parse_knobs(["--port", "0", "--script", path])
    body = {"messages": [{"role": "user", "content": "a trip to Lyon"}], "tools": TOOLS}
    (call,) = plan_calls(knobs, chat_conversation(body))
    assert call.name == "search" and json.loads(call.arguments) == {"q": "flights Lyon"}
    body["messages"] += calls_turn("search")
    assert plan_calls(knobs, chat_conversation(body)) == ()
    assert plan_calls(knobs, chat_conversation(chat())) == (), "the conversation does not say it"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[[rule]]\ncall = 'x'\n", "rule 1: 'offers' must name a tool"),
        ("[[rule]]\noffers = 'x'\nsays = '('\n", "rule 1: 'says' is not a regular expression"),
        ("[[rule]]\noffers = 'x'\ntimes = 0\n", "rule 1: 'times' must be an integer >= 1"),
        ("[[rule]]\noffers = 'x'\nwhen = 1\n", "rule 1: unknown field 'when'"),
        ("[[rule]]\noffers = 'x'\narguments = 3\n", "rule 1: 'arguments' must be a table"),
        ("[rules]\n", "unknown table or key 'rules'"),
        ("offers = [", "not TOML"),
    ],
)
def test_a_bad_script_is_one_line_naming_file_rule_and_field(tmp_path, text, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    assert fragment in str(caught.value) and str(caught.value).startswith(path), caught.value
    assert "\n" not in str(caught.value)
