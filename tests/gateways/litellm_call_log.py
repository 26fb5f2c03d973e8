"""A LiteLLM proxy callback for the tests (config `litellm_settings: callbacks: litellm_call_log.call_log`,
this folder on the proxy's PYTHONPATH): every successful call appended, as LiteLLM makes them, to two JSON
Lines files: its StandardLoggingPayload (`kwargs["standard_logging_object"]`, what every logging
integration receives) to $LOADKIT_TEST_LITELLM_LOG, and the SpendLogs row LiteLLM's own
`get_logging_payload` builds for its database (which the test proxy has none of) to
$LOADKIT_TEST_LITELLM_SPEND, its times as ISO text (as `GET /spend/logs` returns them)."""

from __future__ import annotations

import json
import os
from datetime import datetime

from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy.spend_tracking.spend_tracking_utils import get_logging_payload


def _text(value: object) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _append(variable: str, value: object) -> None:
    with open(os.environ[variable], "a", encoding="utf-8") as out:
        out.write(json.dumps(value, default=_text) + "\n")


class CallLog(CustomLogger):
    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        _append("LOADKIT_TEST_LITELLM_LOG", kwargs["standard_logging_object"])
        _append("LOADKIT_TEST_LITELLM_SPEND", get_logging_payload(kwargs, response_obj, start_time, end_time))


call_log = CallLog()
