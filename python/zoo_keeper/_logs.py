"""Logs: the engine's records reach Python's `logging` through the logger
``zoo_keeper``, silent unless you configure logging::

    import logging
    logging.basicConfig(level=logging.INFO)   # a line per chat, reply and tool call
    logging.getLogger("zoo_keeper").setLevel(logging.DEBUG)  # and every prompt

Each record's ``message`` reads on its own ("tool `add` (call_1) returned
in 0.3 ms"); its ``target`` attribute says where it comes from
(``zoo::chat``, ``zoo::turn``, ``zoo::tool``, ``zoo::hook``,
``zoo::prompt``, ``zoo::raw_output``, ``zoo::logs``, ``zoo::backend``,
``zoo::session`` (debug: one transaction of a session store), or a module
path such as ``llama.cpp``) and its ``fields`` attribute holds the structured fields
(``agent_id`` and ``chat_id`` inside a chat, ``tool``, ``call_id``,
``latency_ms``, ...). At DEBUG, ``zoo::prompt`` records carry each reply's
prompt exactly as the model read it and ``zoo::raw_output`` records the
reply before parsing. Level 5 is the engine's trace level.

The logger's level is respected, and read again when an agent is created
and when each chat starts (a change in the middle of a chat takes effect at
the next). Records are delivered on a thread of the library's own, so a
record never waits for the GIL on an engine thread; if your handlers are
slower than the engine, records are dropped (never queued without bound):
`dropped_logs()` counts them, and a ``zoo::logs`` warning says how many.
"""

from __future__ import annotations

import atexit
import json
import logging
from typing import List, Tuple

from . import _native

#: The engine's trace level (below DEBUG).
TRACE = 5

logger = logging.getLogger("zoo_keeper")
# A library's logger: without configuration nothing is printed.
logger.addHandler(logging.NullHandler())

_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG, "trace": TRACE}


def _engine_level(level: int) -> str:
    """The engine's level for a `logging` level: the records Python keeps."""
    if level <= TRACE:
        return "trace"
    if level <= logging.DEBUG:
        return "debug"
    if level <= logging.INFO:
        return "info"
    if level <= logging.WARNING:
        return "warn"
    if level <= logging.ERROR:
        return "error"
    return "off"


_synced = _engine_level(logger.getEffectiveLevel())


def sync_level() -> None:
    """Collects the records the logger's level lets through (cheap; called
    when an agent is created and when a chat starts)."""
    global _synced
    level = _engine_level(logger.getEffectiveLevel())
    if level != _synced:
        _native.set_log_level(level)
        _synced = level


def _emit(records: List[Tuple[str, str, str, str]]) -> None:
    for level, target, message, fields_json in records:
        number = _LEVELS[level]
        if logger.isEnabledFor(number):
            logger.log(number, message, extra={"target": target, "fields": json.loads(fields_json)})


def dropped_logs() -> int:
    """Records dropped so far because the handlers could not keep up."""
    return int(_native.dropped_logs())


def flush_logs(timeout: float = 5.0) -> bool:
    """Waits up to `timeout` seconds until every record emitted so far has
    reached the logger; returns whether it has."""
    return bool(_native.flush_logs(timeout))


@atexit.register
def _stop() -> None:
    # After this no record reaches Python, which is shutting down.
    _native.flush_logs(1.0)
    _native.set_log_handler(None, "off")


_native.set_log_handler(_emit, _synced)
