"""A LoadTestShape delegating to a kit profile drives Locust's local runner as the profile says.

No network: the user's task only counts itself. This is the wiring the locustfile is expected to use.
"""

from __future__ import annotations

import time

import gevent
from locust import LoadTestShape, User, constant, task
from locust.env import Environment

from scenarios.options import ProfileOptions
from scenarios.registry import build_profile


class _Idle(User):
    wait_time = constant(0.05)

    @task
    def nothing(self) -> None:
        pass


def _run(profile, deadline_s: float) -> list[int]:
    class Shape(LoadTestShape):
        def tick(self):
            t = profile.tick(self.get_run_time())
            return None if t is None else t.as_locust()

    env = Environment(user_classes=[_Idle], shape_class=Shape())
    runner = env.create_local_runner()
    seen: list[int] = []
    runner.start_shape()
    end = time.monotonic() + deadline_s
    try:
        while runner.state != "stopped" and time.monotonic() < end:
            seen.append(runner.user_count)
            gevent.sleep(0.1)
    finally:
        runner.quit()
    assert time.monotonic() < end, "the profile did not end the run by itself"
    return seen


def test_smoke_profile_drives_locust_to_its_users_and_ends_the_run_by_itself():
    seen = _run(build_profile("smoke", ProfileOptions(peak_users=3, duration_s=3)), deadline_s=10)
    assert max(seen) == 3


def test_spike_profile_reaches_the_spike_and_comes_back_to_base():
    opts = ProfileOptions(base_users=1, spike_users=6, ramp_s=0, hold_s=2, settle_s=2)
    seen = _run(build_profile("spike", opts), deadline_s=12)
    top = seen.index(max(seen))
    assert max(seen) == 6 and 1 in seen[top:]
