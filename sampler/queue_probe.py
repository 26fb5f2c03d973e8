"""Queue probe: GET the gateway's JSON endpoint and read the queue length / in-progress fields by path.

Any failure (HTTP error, timeout, non-JSON, missing or non-numeric field) becomes a QueueReading with
empty figures and a one-line error; it never raises, so the sampler keeps sampling.
"""

from __future__ import annotations

import httpx

from contract.http_probe import PROBE_MAX_BYTES, probe_get
from sampler.readings import QueueReading


class FieldError(ValueError):
    """A dotted path that does not lead to a number in the document."""


def field_value(doc: object, dotted: str) -> float:
    """`queue.n_pending` -> doc["queue"]["n_pending"]; list indices allowed; a list yields its length."""
    node = doc
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise FieldError(f"field {dotted!r} not found (stopped at {part!r})")
    if isinstance(node, list):
        return float(len(node))
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise FieldError(f"field {dotted!r} is not a number: {str(node)[:40]!r}")
    return float(node)


class QueueProbe:
    def __init__(
        self,
        url: str,
        queue_field: str,
        inflight_field: str | None,
        timeout_s: float,
        age_field: str | None = None,
    ) -> None:
        self.url = url
        self.queue_field = queue_field
        self.inflight_field = inflight_field
        self.age_field = age_field
        self._timeout_s = timeout_s
        self._client = httpx.Client(timeout=timeout_s)

    def read(self) -> QueueReading:
        try:
            response = probe_get(self._client, self.url, self._timeout_s, PROBE_MAX_BYTES)
            if response.status >= 400:
                raise ValueError(f"HTTP {response.status}")
            doc = response.json()
            queue = field_value(doc, self.queue_field)
            inflight = field_value(doc, self.inflight_field) if self.inflight_field else None
            age = field_value(doc, self.age_field) if self.age_field else None
        except (httpx.HTTPError, ValueError) as exc:  # JSONDecodeError and FieldError are ValueErrors
            return QueueReading(None, None, error=_one_line(exc))
        return QueueReading(queue, inflight, age_s=age)

    def close(self) -> None:
        self._client.close()


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:200]
