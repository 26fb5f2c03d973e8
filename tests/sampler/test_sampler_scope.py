"""Which of a regex's matches are the target (sampler/selection.py's Scope): the kit's own process tree
never is, save the gateway the kit started; with the kit's agents launching the target, only the kit's
processes still carrying its command line (forked workers, a child before its exec) are left out."""

from __future__ import annotations

from sampler.selection import AmbiguousTarget, Scope, Tree

KIT = ["python", "-m", "locust", "--target-match", "gateway"]
TABLE = {
    1: (0, ["init"]),
    100: (1, KIT),  # the load generator
    101: (100, KIT),  # a forked worker
    102: (100, ["python", "-m", "sampler"]),
    103: (101, KIT),  # a worker's child before its exec
    104: (101, ["hermes", "kanban", "show"]),  # ... and after
    200: (100, ["gateway", "run"]),  # the gateway the kit started
    201: (200, ["gateway", "worker"]),
    300: (1, ["gateway", "run"]),  # someone else's
}


def test_the_kits_tree_is_the_kits_save_the_gateway_it_started():
    scope = Scope(kit_root=100, kit_targets=frozenset({200}))
    assert scope.kit_pids(TABLE) == {100, 101, 102, 103, 104}


def test_with_the_target_launched_by_the_agents_only_the_kits_own_command_line_is_the_kits():
    scope = Scope(kit_root=100, kit_launches=True)
    assert scope.kit_pids(TABLE) == {100, 101, 103}


def test_without_a_load_generator_nothing_is_the_kits():
    assert Scope().kit_pids(TABLE) == set()


def test_the_refusal_lists_each_tree_and_the_options_that_pick_one():
    trees = [
        Tree(200, "ana", "/srv/a", "child of pid 150", "gateway run", frozenset({200, 201})),
        Tree(300, "bo", "/srv/b", "session 300", "gateway run", frozenset({300})),
    ]
    message = AmbiguousTarget("gateway", trees).message("--target-cwd DIR")
    assert "2 unrelated process trees" in message
    assert "pid 200 (user ana, cwd /srv/a, child of pid 150, 2 processes)" in message
    assert "pid 300 (user bo, cwd /srv/b, session 300, 1 process)" in message
    assert message.endswith("pick one with --target-cwd DIR")
