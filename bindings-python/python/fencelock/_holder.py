"""Who holds a lock: what ``LockManager.holder(name)`` returns (docs/observability.md)."""

from __future__ import annotations

import datetime
from typing import NamedTuple, Optional


class Holder(NamedTuple):
    """Who holds a lock now.

    ``remaining`` is how long a quorum still holds it at least, in seconds (as
    ``LockManager.remaining``). ``label``, ``since`` (an aware UTC ``datetime``, by the
    holder's clock) and ``fencing_token`` come from the note its holder left: they are
    ``None`` when it left none (its manager has no ``holder`` option, another library's
    classic lock, or a note not written yet: it follows the grant by one call)."""

    remaining: float
    label: Optional[str]
    since: Optional[datetime.datetime]
    fencing_token: Optional[int]


def _make(remaining: float, label: Optional[str], since_ms: Optional[int], fencing_token: Optional[int]) -> Holder:
    since = (
        None
        if since_ms is None
        else datetime.datetime.fromtimestamp(since_ms / 1000, tz=datetime.timezone.utc)
    )
    return Holder(remaining, label, since, fencing_token)
