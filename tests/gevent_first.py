"""Loaded by pytest before any plugin (`-p tests.gevent_first` in pyproject.toml).

Locust's gevent monkey-patching must happen before anything imports ssl (pytest plugins of anyio and
langsmith do), or ssl's context setup recurses forever. anyio's plugin is disabled for the same reason.
"""

from gevent import monkey

monkey.patch_all()

from contract import gevent_compat  # noqa: E402,F401 - hides trio from httpcore, as in the Locust process
