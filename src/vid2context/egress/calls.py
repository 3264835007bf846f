"""One credential per program run, so the proxy can say what it refused for that run.

yt-dlp and ffmpeg only report "HTTP Error 403" when the proxy refuses a hop; the run's answer
must be ``unsupported-input`` naming the class instead. Each run gets its own proxy user name (a
random id, ``http://<id>:x@127.0.0.1:port``): the proxy admits only ids of runs still going
(so no other local program can use it) and records its refusals under the id, and the provider
reads them once the program has ended. The proxy runs in a thread of its own, hence the lock.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field

from .resolve import Refused

__all__ = ["Call", "Calls"]


@dataclass
class Call:
    """One program run's credential and what the proxy refused for it."""

    id: str
    proxy_url: str = ""
    refusals: list[Refused] = field(default_factory=list)

    @property
    def refused(self) -> Refused | None:
        """The first refusal: the one the program most likely failed on."""
        return self.refusals[0] if self.refusals else None


class Calls:
    """The runs the proxy admits, by id."""

    def __init__(self) -> None:
        self._open: dict[str, Call] = {}
        self._lock = threading.Lock()

    def open(self) -> Call:
        call = Call(id=secrets.token_hex(16))
        with self._lock:
            self._open[call.id] = call
        return call

    def close(self, call: Call) -> None:
        with self._lock:
            self._open.pop(call.id, None)

    def get(self, call_id: str) -> Call | None:
        """The open run with this id, or ``None`` (unknown, or ended)."""
        with self._lock:
            return self._open.get(call_id)

    def record(self, call: Call, refused: Refused) -> None:
        with self._lock:
            call.refusals.append(refused)
