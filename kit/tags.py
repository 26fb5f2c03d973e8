"""`--tags` / `--exclude-tags` as Locust users expect them: the agents' tasks carry tags (their protocol,
and `tasks` on task-working agents) and the run keeps only the agent classes left with a task.

Filters with Locust's own `filter_tasks_by_tags` (what its runner does again at start, to the same
result); it never changes which tags a task has.
"""

from __future__ import annotations

from locust import User
from locust.user.task import filter_tasks_by_tags

from contract.errors import InputError


class NoTaggedAgents(InputError):
    """Every agent class lost all its tasks to the tag options; the message is one line."""


def keep_tagged_classes(
    classes: list[type[User]], tags: list[str] | None, exclude: list[str] | None
) -> list[type[User]]:
    """The classes that still have a task after filtering (all of them when no tag option is given)."""
    if not tags and not exclude:
        return classes
    for user_class in classes:
        filter_tasks_by_tags(user_class, set(tags) if tags else None, set(exclude) if exclude else None)
    kept = [user_class for user_class in classes if user_class.tasks]
    if not kept:
        names = ", ".join(c.__name__ for c in classes)
        raise NoTaggedAgents(f"no task of {names} matches --tags {tags or []} --exclude-tags {exclude or []}")
    return kept
