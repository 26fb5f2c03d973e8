"""Keeps httpx usable inside Locust's gevent-patched process when trio happens to be installed.

gevent's monkey-patching removes `select.epoll`; httpcore then fails importing trio with an
AttributeError (it only expects ImportError). httpx never needs trio under Locust, so we hide it.
Import this module before the first httpx client is created; it changes nothing else.
"""

import select
import sys

if not hasattr(select, "epoll") and "trio" not in sys.modules:
    sys.modules["trio"] = None  # type: ignore[assignment] # makes `import trio` raise ImportError, which httpcore handles
