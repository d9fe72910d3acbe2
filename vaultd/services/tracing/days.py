"""The days a placement trace reads first (docs/leak-tracing.md, "A year of views"): the visible
pattern prints the view's time in the deployment's zone, and a wash leaves it; a worker scores
each day of the year as the date it shows (`render.forensic.placement_date`), and the views
of the leak's page on the best DAYS_READ of them are scored before the rest of its year.

The dates are asked in the watermark's zone (`watermark.timezone`), as the page path prints
them (`vaultd.timefmt.paris_display`); a day's views are those logged between its local
midnights, widened by MARGIN (the log's time and the printed one are taken apart by the
render).
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from vaultd.services.tracing.candidates import YEAR

# Days whose views are scored before the year's, best first: the date read was the best of
# 367 on 18 of 18 washed corpus leaks (as served, 0.6 at JPEG q60, halved at JPEG q50), the
# runner-up 0.005-0.02 under it; the next seven cost a day's views each, a wrong digit's.
DAYS_READ = 8
MARGIN = timedelta(minutes=2)


def year_dates(now: datetime, zone: ZoneInfo) -> list[str]:
    """The local dates ("YYYY-MM-DD") of the last YEAR in `zone`, newest first."""
    newest, oldest = now.astimezone(zone).date(), (now - YEAR).astimezone(zone).date()
    return [(newest - timedelta(days=k)).isoformat()
            for k in range((newest - oldest).days + 1)]


def best_days(scores: list[float], dates: list[str]) -> list[str]:
    """The DAYS_READ dates that score best, best first; none when no date was read (the
    worker's scores are NaN, or not one a date)."""
    if len(scores) != len(dates) or not all(math.isfinite(score) for score in scores):
        return []
    ranked = sorted(range(len(dates)), key=lambda k: -scores[k])
    return [dates[k] for k in ranked[:DAYS_READ]]


def day_window(day: str, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The UTC times between `day`'s local midnights in `zone`, widened by MARGIN."""
    local = date.fromisoformat(day)
    start = datetime.combine(local, time(), tzinfo=zone).astimezone(UTC)
    end = datetime.combine(local + timedelta(days=1), time(), tzinfo=zone).astimezone(UTC)
    return start - MARGIN, end + MARGIN
