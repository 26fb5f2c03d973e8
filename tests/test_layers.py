"""The architecture as a test: a module may import only rooms of its own layer or below, the rooms'
import graph has no cycle (docs/architecture.md draws the layers), no module outside contract/
spells a run directory's column or event name: it takes it from contract/schema.py, and the run (kit/)
asks the kit's objects what it needs, never their type.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from contract import schema
from tests.paths import REPO

# Bottom to top; a room may import its own layer and any layer below it, never one above.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"contract"}),
    frozenset({"scenarios", "analysis"}),
    frozenset({"agents", "sampler", "simgateway", "lifecycle", "capture"}),
    frozenset({"kit", "locustfile"}),
)
ROOMS = frozenset().union(*LAYERS)
# agents/ by job, bottom to top: a sub-room imports the ones below it and the room's core (agents/*.py:
# settings, the run context, the workload's draws, the base agent, the presets' table), never one above.
AGENT_ROOMS = ("wire", "mcp", "loop", "gateways", "capacity", "replay")
AGENT_CORE_MAX = 12  # agents/*.py, __init__ included: what every sub-room shares, not a seventh job


def layer_of(room: str) -> int:
    return next(i for i, rooms in enumerate(LAYERS) if room in rooms)


def imported_rooms(source: str) -> set[str]:
    """Rooms (top-level packages of the kit) a module imports, at any depth: a lazy import counts."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.update(name.split(".")[0] for name in names if name.split(".")[0] in ROOMS)
    return found


def upward_imports(room: str, source: str) -> list[str]:
    return sorted(r for r in imported_rooms(source) if layer_of(r) > layer_of(room))


def module_files() -> dict[str, list[Path]]:
    files = {room: sorted((REPO / room).rglob("*.py")) for room in ROOMS if (REPO / room).is_dir()}
    files["locustfile"] = [REPO / "locustfile.py"]
    return files


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph() -> dict[str, set[str]]:
    """Module -> kit modules it imports (by dotted name, packages resolved to their __init__)."""
    paths = [p for files in module_files().values() for p in files]
    names = {module_name(p) for p in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    edges.add(full if full in names else node.module)
            elif isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
        graph[module_name(path)] = {e for e in edges if e in names and e != module_name(path)}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_no_room_imports_a_layer_above_it(room):
    bad = {
        str(path.relative_to(REPO)): up
        for path in module_files().get(room, [])
        if (up := upward_imports(room, path.read_text(encoding="utf-8")))
    }
    assert bad == {}


def agent_room(path: Path) -> str | None:
    """The sub-room of agents/ a module is in; None for the room's core (agents/*.py)."""
    parts = path.relative_to(REPO / "agents").parts
    return parts[0] if len(parts) > 1 else None


def agent_rooms_imported(source: str) -> set[str]:
    """The sub-rooms of agents/ a module imports (the core's modules are not sub-rooms)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found.update(n.split(".")[1] for n in names if n.startswith("agents.") and n.count(".") >= 2)
    return found & set(AGENT_ROOMS)


def test_no_agents_sub_room_imports_one_above_it():
    bad = {}
    for path in module_files()["agents"]:
        room = agent_room(path)
        if room is None:
            continue
        above = AGENT_ROOMS[AGENT_ROOMS.index(room) + 1 :]
        if up := sorted(agent_rooms_imported(path.read_text(encoding="utf-8")) & set(above)):
            bad[str(path.relative_to(REPO))] = up
    assert bad == {}


def test_every_agents_module_is_in_a_sub_room_but_the_core():
    core = sorted(p.name for p in (REPO / "agents").glob("*.py"))
    assert len(core) <= AGENT_CORE_MAX, core
    rooms = {p.name for p in (REPO / "agents").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert rooms == set(AGENT_ROOMS)


def test_the_sub_room_check_sees_an_import_from_above():
    assert agent_rooms_imported("from agents.capacity.idle_sessions import Opened\n") == {"capacity"}
    assert agent_rooms_imported("import agents.wire.sse\nfrom agents.base import KitAgent\n") == {"wire"}


def test_the_module_graph_has_no_cycle():
    assert find_cycle(module_graph()) is None


def test_the_check_fails_on_an_upward_import_and_on_a_cycle():
    """The fixture is an agents-layer module that imports the run orchestrator: the check must see it."""
    fixture = (REPO / "tests" / "fixtures" / "upward_import.py").read_text(encoding="utf-8")
    assert upward_imports("agents", fixture) == ["kit"]
    assert upward_imports("contract", "from scenarios import registry\n") == ["scenarios"]
    assert find_cycle({"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}}) == ["a.x", "a.y", "a.z", "a.x"]


# Names of one plain word (ts, ok, event, status, model, host, round...) are also keys of the gateways'
# JSON, of run.json and of derived tables: a literal check cannot tell them apart, so only the names of
# more than one word (or with a digit: load1) are checked; less these, which are also fields of the
# protocols the kit speaks.
PROTOCOL_FIELDS = {
    "task_id": "the gateways' task APIs (the task board, Hermes runs, A2A, LangGraph)",
    "session_id": "the gateways' session APIs and traces",
    "agent_id": "the simulator's agent API",
    "request_id": "the gateways' request ids",
    "tool_calls": "OpenAI chat messages and stream deltas",
    "in_progress": "Responses and A2A states; the task board's and the Kanban sidecar's stats JSON",
    "queue_length": "the task board's and the Kanban sidecar's stats JSON (the presets' queue probes)",
    "worker_pid": "the task board's and Hermes Kanban's task JSON",
}


def schema_names() -> set[str]:
    """Every column and event (status) name contract/schema.py defines."""
    names = {c for n, v in vars(schema).items() if n.endswith("_COLUMNS") for c in v}
    records = (schema.SAMPLE_EVENT, schema.AGENT_EVENT, schema.CAPACITY_EVENT, schema.TASK_STATUS)
    return names | {e for record in records for e in dataclasses.astuple(record)}


CHECKED_NAMES = {n for n in schema_names() if re.search(r"[_0-9]", n)} - set(PROTOCOL_FIELDS)


def spelled_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of every string literal that is a checked schema name (docstrings aside)."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in CHECKED_NAMES
        and id(node) not in docstrings
    )


@pytest.mark.parametrize("room", sorted(ROOMS - {"contract"}))
def test_no_module_outside_contract_spells_a_column_or_event_name(room):
    spelled = {
        str(path.relative_to(REPO)): names
        for path in module_files().get(room, [])
        if (names := spelled_names(path.read_text(encoding="utf-8")))
    }
    assert spelled == {}


def test_the_name_check_sees_a_column_and_an_event_spelled_and_not_a_docstring():
    source = 'def f(row):\n    "target_rss_bytes"\n    return row["target_rss_bytes"], "target_exited"\n'
    assert spelled_names(source) == [(3, "target_exited"), (3, "target_rss_bytes")]
    assert "target_rss_bytes" in CHECKED_NAMES and "ts" not in CHECKED_NAMES


def kit_classes() -> set[str]:
    """The name of every class the kit's rooms define."""
    return {
        node.name
        for files in module_files().values()
        for path in files
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    }


def class_names(node: ast.expr) -> list[str]:
    """The class names isinstance() is given: a class, module.Class, a tuple or a union (A | B) of them."""
    if isinstance(node, ast.Tuple):
        return [name for elt in node.elts for name in class_names(elt)]
    if isinstance(node, ast.BinOp):
        return class_names(node.left) + class_names(node.right)
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return [node.id] if isinstance(node, ast.Name) else []


def type_switches(source: str, classes: set[str]) -> list[tuple[int, str]]:
    """(line, class) of every isinstance() of one of `classes`."""
    return sorted(
        (node.lineno, name)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
        for name in class_names(node.args[1])
        if name in classes
    )


def test_the_run_asks_the_kits_objects_never_their_type():
    """A pacing, profile, agent, plan or session protocol answers what kit/ asks of it (a method, a
    trait): no isinstance of any class the kit defines, none allowed. Locust's classes (its runners) and
    Python's are not the kit's to give behaviour: kit/ may ask their type."""
    classes = kit_classes()
    switches = {
        str(path.relative_to(REPO)): found
        for path in module_files()["kit"]
        if (found := type_switches(path.read_text(encoding="utf-8"), classes))
    }
    assert switches == {}


def test_the_type_check_sees_the_kits_classes_and_not_locusts():
    source = (
        "def f(pacing, runner):\n"
        "    if isinstance(runner, MasterRunner) or isinstance(pacing, (dict, pacing.SweepPacing)):\n"
        "        return isinstance(pacing, RoundsPacing | FleetArrivals)\n"
    )
    found = [(2, "SweepPacing"), (3, "FleetArrivals"), (3, "RoundsPacing")]
    assert type_switches(source, kit_classes()) == found


WEAK_TABLES = frozenset({"WeakKeyDictionary", "WeakValueDictionary"})
RUN_KEYS = frozenset({"environment", "agent", "self", "user"})  # a key naming a run's or an agent's object


def run_state_tables(source: str) -> list[tuple[int, str]]:
    """(line, name) of every module-level table of per-run or per-agent state: a weak mapping made at
    import (`X = weakref.WeakKeyDictionary()`: its keys are objects that come and go), or a mapping a
    function fills under a key naming an environment or an agent (`X[environment] = ...`)."""
    tree = ast.parse(source)
    weak, mappings = {}, {}
    for node in tree.body:
        target, value = _assigned(node)
        if target is None or not isinstance(value, ast.Call | ast.Dict):
            continue
        if isinstance(value, ast.Call) and set(class_names(value.func)) & WEAK_TABLES:
            weak[target] = node.lineno
        elif isinstance(value, ast.Dict) or set(class_names(value.func)) & {"dict", "defaultdict"}:
            mappings[target] = node.lineno
    keyed = {
        sub.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for sub in node.targets
        if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name)
        if {n.id for n in ast.walk(sub.slice) if isinstance(n, ast.Name)} & RUN_KEYS
    }
    found = weak | {name: line for name, line in mappings.items() if name in keyed}
    return sorted((line, name) for name, line in found.items())


def _assigned(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None


def test_no_run_or_agent_state_lives_in_a_module_level_table():
    """A run's state is its context (agents/run_context.py, made at the run's start, anew for each web-UI
    run) and an agent's is the agent's own: a module-level table filled as runs go would keep one run's
    state for the next, in an order no file states."""
    tables = {
        str(path.relative_to(REPO)): found
        for room in ("agents", "kit")
        for path in module_files()[room]
        if (found := run_state_tables(path.read_text(encoding="utf-8")))
    }
    assert tables == {}


def test_the_table_check_sees_a_run_keyed_table_and_not_a_cache_or_a_constant():
    source = (
        "import weakref\n"
        "_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()\n"
        "_SEEN = {}\n"
        "KINDS = {'a': 1}\n"
        "_CACHE: dict = {}\n"
        "def keep(environment, run, workload):\n"
        "    _SEEN[environment.runner] = True\n"
        "    _CACHE[id(workload)] = run\n"
    )
    assert run_state_tables(source) == [(2, "_RUNS"), (3, "_SEEN")]


def documented_imports() -> dict[str, set[str]]:
    """docs/architecture.md's room table: each room's imports as it lists them."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)(?:/|\.py)` \|.*\| ([^|]*) \|$", text, flags=re.M)
    return {room: set(re.findall(r"\w+", cell)) & ROOMS for room, cell in rows if room in ROOMS}


def test_the_architecture_docs_list_each_rooms_imports_as_they_are():
    actual = {
        room: set().union(*(imported_rooms(p.read_text(encoding="utf-8")) for p in files)) - {room}
        for room, files in module_files().items()
    }
    assert documented_imports() == actual
