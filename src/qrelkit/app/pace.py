"""How fast each labeller works: pairs per hour and the median time per pair, from the grade events' times.

The rule, for one labeller's grade events in the order they were recorded (every event counts: a changed
grade took the labeller's time as well):

- the time of an event is the gap since the labeller's previous event;
- a gap longer than :data:`BREAK_SECONDS` (10 minutes) is a break: it is not working time, and the event
  after it starts a new sitting; the first event of all has no previous one. Neither is timed;
- working time is the sum of the timed gaps; pairs per hour = timed events / working time in hours;
- the median time per pair is the median of the timed gaps (the mean of the two middle ones for an even
  count).

The page's own per-pair timer (``time_spent_ms``) is not used: it starts when a page loads, so it misses
reading time after a reload and counts a tab left open; the events' times are what the store records for
every grade, however it arrived.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import sqlite3
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BREAK_SECONDS", "Pace", "labeller_pace", "pace"]

#: A gap between two grade events longer than this (in seconds) is a break, not working time.
BREAK_SECONDS = 600.0


@dataclass(frozen=True)
class Pace:
    """One labeller's pace (module docstring for the rule); ``None`` where no gap was timed."""

    events: int  # grade events
    timed: int  # events whose gap was working time
    working_seconds: float
    sittings: int  # runs of events separated by breaks
    per_hour: float | None
    median_seconds: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "timed": self.timed,
            "working_seconds": self.working_seconds,
            "sittings": self.sittings,
            "pairs_per_hour": self.per_hour,
            "median_seconds_per_pair": self.median_seconds,
            "break_seconds": BREAK_SECONDS,
        }


def _time(value: str | _dt.datetime) -> _dt.datetime:
    if isinstance(value, _dt.datetime):
        return value
    return _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def pace(times: Sequence[str | _dt.datetime], *, break_seconds: float = BREAK_SECONDS) -> Pace:
    """The pace of one labeller from their grade events' times (ISO 8601 text or datetimes), in the order
    the events were recorded."""
    stamps = [_time(t) for t in times]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(stamps)]
    worked = [g for g in gaps if g <= break_seconds]
    sittings = (1 + sum(g > break_seconds for g in gaps)) if stamps else 0
    total = float(sum(worked))
    return Pace(
        events=len(stamps),
        timed=len(worked),
        working_seconds=total,
        sittings=sittings,
        per_hour=len(worked) * 3600.0 / total if total > 0 else None,
        median_seconds=float(statistics.median(worked)) if worked else None,
    )


def labeller_pace(conn: sqlite3.Connection) -> dict[str, Pace]:
    """Every labeller's :class:`Pace` over all their grade events (every rubric version), by name."""
    times: dict[str, list[str]] = {
        r[0]: [] for r in conn.execute("SELECT name FROM users WHERE role = 'labeller' ORDER BY name")
    }
    rows = conn.execute(
        "SELECT u.name, e.created_at FROM grade_events e JOIN users u USING (user_id) ORDER BY e.event_id"
    )
    for name, at in rows:
        times.setdefault(name, []).append(at)
    return {name: pace(ts) for name, ts in times.items()}
