"""Budget windows: which fixed time window a moment falls in, for a policy's duration (MLflow's BudgetWindow).
Windows of minutes, hours, days and weeks are counted from the epoch; months are calendar months (UTC)."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime

_SECONDS = {"MINUTES": 60, "HOURS": 3600, "DAYS": 86400, "WEEKS": 7 * 86400}


def window_of(unit: str, value: int, now: float) -> tuple[int, int]:
    """(start, end) in epoch seconds of the window containing ``now``."""
    value = max(1, int(value or 1))
    if unit == "MONTHS":
        moment = datetime.fromtimestamp(now, UTC)
        index = moment.year * 12 + moment.month - 1
        first = index - index % value
        last = first + value
        return calendar.timegm((first // 12, first % 12 + 1, 1, 0, 0, 0)), calendar.timegm((last // 12, last % 12 + 1, 1, 0, 0, 0))
    length = _SECONDS.get(unit, 86400) * value
    start = int(now) - int(now) % length
    return start, start + length
