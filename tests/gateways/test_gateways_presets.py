"""`--gateway NAME` presets: every preset resolves to agent classes that exist, unknown names and broken
spec files fail with one line, and a spec preset carries its file to the agent."""

from __future__ import annotations

import pytest

from agents.base import KitAgent
from agents.presets import PRESETS, GatewayError, agent_classes, preset

EXAMPLE_SPEC = "examples/specs/simulator-tasks.toml"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_names_importable_kit_agents(name):
    classes = agent_classes(preset(name))
    assert classes and all(issubclass(c, KitAgent) for c in classes)


def test_unknown_gateway_fails_with_one_line_listing_the_known_ones():
    with pytest.raises(GatewayError) as caught:
        preset("hermez")
    message = str(caught.value)
    assert "\n" not in message and "hermez" in message and "langgraph" in message and "spec:FILE" in message


def test_spec_preset_passes_its_file_to_the_spec_agent():
    chosen = preset(f"spec:{EXAMPLE_SPEC}")
    assert chosen.defaults == {"spec_file": EXAMPLE_SPEC}
    assert [c.__name__ for c in agent_classes(chosen)] == ["SpecAgent"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[create]\npath='/x'\nid='id'\n", "missing [poll]"),
        ("[create]\npath='/x'\n[poll]\npath='/x/{id}'\nstatus='s'\n[poll.terminal]\ndone=['ok']\n", "id ="),
        (
            "[create]\npath='/x'\nid='id'\n[poll]\npath='/x'\nstatus='s'\n[poll.terminal]\nfine=['ok']\n",
            "fine",
        ),
        ("[create\n", "not valid TOML"),
    ],
)
def test_broken_spec_file_fails_with_one_line_naming_the_problem(tmp_path, text, needle):
    path = tmp_path / "broken.toml"
    path.write_text(text)
    with pytest.raises(GatewayError) as caught:
        preset(f"spec:{path}")
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_missing_spec_file_fails_with_one_line(tmp_path):
    with pytest.raises(GatewayError, match="cannot read"):
        preset(f"spec:{tmp_path / 'absent.toml'}")
