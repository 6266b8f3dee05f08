"""The late-submission policy: when each notebook was handed in, and what that costs.

Where the submission time comes from
------------------------------------
- **nbgrader** writes ``timestamp.txt`` beside each submitted notebook
  (``submitted/<student>/<assignment>/timestamp.txt``), e.g.
  ``2026-03-01 22:59:59.123456 UTC`` (nbgrader's ``Exchange.timestamp_format``).
- **Blackboard** puts the attempt's date in the file name,
  ``..._attempt_2026-03-01-22-59-59_...``, in the server's local time, with no zone.
- **Canvas** puts ``_LATE`` in the file name of a submission it received after
  its own due date, and no time at all. Such a submission is charged one
  period (one day or one hour: the least any late submission past the grace
  period costs), and its note says that the real time is unknown; one without
  the marker counts as on time, as Canvas found it.
- **Moodle**'s export has no submission time. Without a time nothing is
  charged, and the note says so; ``--timestamps FILE`` (CSV ``student_id,
  submitted_at``, e.g. made from the LMS's grading worksheet) supplies times
  for any export and wins over what the files say.

Time zones
----------
Every time is compared as an aware datetime. A time written without a zone
(Blackboard's file names, a deadline such as ``2026-03-01 23:59``) is taken in
the policy's ``timezone`` (an IANA name such as ``Europe/Berlin``; default
``UTC``, the zone nbgrader itself assumes for a naive timestamp). The
gradebook stores naive UTC, as nbgrader does.

The penalty (nbgrader's conventions)
------------------------------------
As nbgrader's ``SubtractPerHour`` late-submission plugin: every *started*
period after the deadline costs ``penalty`` (``ceil(seconds late / period)``),
and the penalty never exceeds the raw score, so the final score is never
negative. On top of that: a submission at the deadline exactly, or within
``grace`` after it, costs nothing; ``cap`` bounds the penalty; ``penalty`` and
``cap`` are points, or percent of the assignment's maximum when written
``"10%"``. The final score is the raw score minus the penalty, and the
gradebook holds the same penalty in nbgrader's ``late_submission_penalty``
column, so ``nbgrader export`` gives the same final score as ``student_scores.csv``.

Configuration, in ``nbgrader_config.py`` beside nbgrader's own settings::

    c.LatePolicy.deadlines = {"hw2_stable_softmax": "2026-03-01 23:59"}
    c.LatePolicy.timezone = "Europe/Berlin"   # for times written without a zone
    c.LatePolicy.penalty = "10%"              # per started period; "1" = 1 point
    c.LatePolicy.period = "day"               # or "hour"
    c.LatePolicy.grace = "15m"                # free lateness: "0", "90s", "15m", "2h", "1d"
    c.LatePolicy.cap = "50%"                  # the most a late submission can lose

One learner's extension (nbgrader's)
------------------------------------
nbgrader keeps a per-student extension in its gradebook,
``SubmittedAssignment.extension`` (an interval added to the assignment's due
date; nbgrader's ``SubmittedAssignment.duedate`` and ``total_seconds_late``
include it). The class run reads it for each submission
(:attr:`classgrader.pipeline.intake.Submission.extension`), and that learner's
deadline is the assignment's deadline plus the extension; the late record
keeps the assignment's ``deadline`` and the ``extension`` in seconds, and the
note names the extension. Granting or changing one re-prices the saved
results on the next run; nothing is graded again.

The settings are declared, and read from the file, in
:class:`classgrader.settings.LatePolicy`; ``./course grade``'s options
``--deadline``, ``--penalty``, ``--period``, ``--grace``, ``--cap``,
``--timezone`` (derived from them) override them for one run.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from dateutil.parser import isoparse
from traitlets.config import Config

from classgrader import setting_values, settings
from classgrader.records import Late, Result
from classgrader.setting_values import Amount
from classgrader.settings import PERIODS, ConfigError, LatePolicy

UTC = dt.UTC


class LatePolicyError(ConfigError):
    """The late policy cannot be used as configured; the message says which setting is wrong."""


class TimestampError(ValueError):
    """A submission time that cannot be read; the message quotes it and where it came from."""


# --------------------------------------------------------------------------
# Reading times
# --------------------------------------------------------------------------

_BLACKBOARD = re.compile(r"^(\d{4})-(\d{2})-(\d{2})-(\d{2})-(\d{2})-(\d{2})$")
_OFFSET = re.compile(r"^[+-]\d{2}:?\d{2}$")
_DATE = re.compile(r"^\d{4}-?(W\d{2}|\d{2}-?\d{2})")  # a date: day or week, not a bare year


def zone(name: str) -> dt.tzinfo:
    """The time zone called ``name`` (:func:`classgrader.setting_values.zone`); raises :class:`LatePolicyError`."""
    try:
        return setting_values.zone(name)
    except ValueError as exc:
        raise LatePolicyError(str(exc)) from None


def zone_name(tz: dt.tzinfo) -> str:
    """The name :func:`zone` reads back: an IANA name, ``UTC`` or an offset such as ``+01:00``.

    >>> zone_name(zone("Europe/Berlin")), zone_name(UTC), zone_name(zone("-03:30"))
    ('Europe/Berlin', 'UTC', '-03:30')
    """
    if isinstance(tz, ZoneInfo):
        return tz.key
    offset = tz.utcoffset(None) or dt.timedelta(0)
    if not offset:
        return "UTC"
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def parse_time(text: str, default_zone: dt.tzinfo, *, source: str = "the timestamp") -> dt.datetime:
    """An aware datetime from a submission time or deadline as people and LMSs write them.

    Accepted: ISO 8601 (``2026-03-01T22:59:59+01:00``, ``...Z``), nbgrader's
    ``2026-03-01 22:59:59.123456 UTC`` (any zone name or offset as the last
    word), Blackboard's ``2026-03-01-22-59-59``, and each of these without a
    zone, which is then taken in ``default_zone``.

    >>> parse_time("2026-03-01 22:59:59.5 UTC", UTC).isoformat()
    '2026-03-01T22:59:59.500000+00:00'
    >>> parse_time("2026-03-01-23-59-00", zone("Europe/Berlin")).astimezone(UTC).isoformat()
    '2026-03-01T22:59:00+00:00'
    """
    raw = (text or "").strip()
    if not raw:
        raise TimestampError(f"{source} is empty")
    m = _BLACKBOARD.match(raw)
    stamp = "{}-{}-{} {}:{}:{}".format(*m.groups()) if m else raw
    tz, zone_word = None, ""
    head, _, last = stamp.rpartition(" ")
    if head and (_OFFSET.match(last) or not re.match(r"^\d", last)):
        stamp, zone_word = head, last  # "<date> <time> <zone>", the zone read once the date is
    try:
        if not _DATE.match(stamp):  # isoparse reads a bare year or month too, which no one means by a time
            raise ValueError(stamp)
        when: dt.datetime = isoparse(stamp)
    except ValueError:
        raise TimestampError(
            f"{source} {raw!r} is not a date and time: expected e.g. '2026-03-01 23:59:00 UTC' "
            "or '2026-03-01T23:59:00+01:00'"
        ) from None
    if zone_word:
        try:
            tz = zone(zone_word)
        except LatePolicyError:
            raise TimestampError(f"{source} {raw!r} ends with an unknown time zone {zone_word!r}") from None
    if when.tzinfo is not None and tz is not None:
        raise TimestampError(f"{source} {raw!r} gives its time zone twice")
    if when.tzinfo is None:
        when = when.replace(tzinfo=tz or default_zone)
    return when


# --------------------------------------------------------------------------
# The policy
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Policy:
    """One assignment's deadline and penalty. Without a deadline nothing is ever late."""

    deadline: dt.datetime | None = None
    timezone: dt.tzinfo = UTC
    penalty: Amount = Amount(0.0, False)
    period: str = "day"
    grace_seconds: float = 0.0
    cap: Amount | None = None

    def describe(self) -> str:
        if self.deadline is None:
            return "no deadline set: no late penalty"
        text = f"deadline {self.deadline.isoformat()}; {self.penalty} per started {self.period} late"
        if self.grace_seconds:
            text += f" after a grace period of {human(self.grace_seconds)}"
        if self.cap is not None:
            text += f", at most {self.cap}"
        return text


def make_policy(assignment: str, given: Mapping[str, Any]) -> Policy:
    """A :class:`Policy` from plain settings (the traits of :class:`~classgrader.settings.LatePolicy`).

    ``deadline`` (for this run) wins over ``deadlines[assignment]``.
    """
    known = LatePolicy.class_trait_names(config=True)
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise LatePolicyError(f"unknown late-policy setting(s) {', '.join(unknown)}; known: {', '.join(known)}")
    try:
        section = settings.section(Config({"LatePolicy": dict(given)}), LatePolicy)
    except ConfigError as exc:
        raise LatePolicyError(str(exc)) from None
    return policy_of(section, assignment)


def policy_of(section: LatePolicy, assignment: str) -> Policy:
    """The :class:`Policy` of ``assignment`` under the course's ``c.LatePolicy`` (read and checked)."""
    text = section.deadline or section.deadlines.get(assignment)
    deadline = None
    if text:
        try:
            deadline = parse_time(text, section.timezone, source=f"the deadline of {assignment}")
        except TimestampError as exc:
            raise LatePolicyError(str(exc)) from None
    return Policy(
        deadline=deadline,
        timezone=section.timezone,
        penalty=section.penalty,
        period=section.period,
        grace_seconds=section.grace,
        cap=section.cap,
    )


def read_timestamps_file(path: Path) -> dict[str, str]:
    """``{student: submitted_at}`` from a CSV with a header naming ``student_id`` and ``submitted_at``."""
    from classgrader.pipeline.intake import safe_id

    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise LatePolicyError(f"{path} is empty: expected a header 'student_id,submitted_at' and one row per student")
    header = [h.strip().lower() for h in rows[0]]
    try:
        sid, when = header.index("student_id"), header.index("submitted_at")
    except ValueError:
        raise LatePolicyError(
            f"{path}: the first row must name the columns student_id and submitted_at, not {rows[0]}"
        ) from None
    return {safe_id(r[sid]): r[when].strip() for r in rows[1:] if len(r) > max(sid, when) and r[sid].strip()}


# --------------------------------------------------------------------------
# Assessing one submission
# --------------------------------------------------------------------------


def assess(
    policy: Policy,
    *,
    raw_score: float,
    max_score: float,
    timestamp: str | None,
    timestamp_source: str = "timestamp.txt",
    lms_late: bool | None = None,
    submitted: bool = True,
    extension: float = 0.0,
) -> Late:
    """What lateness costs one submission, stored in its result as ``late``.

    The keys (:class:`~classgrader.records.Late`): ``submitted_at`` (ISO 8601
    in UTC, or None), ``source`` (where the time came from), ``deadline``
    (ISO, or None), ``seconds_late`` (0 when on time), ``periods`` (started
    periods charged), ``penalty`` (points), ``raw_score``, ``final_score``,
    ``status`` (``on_time``, ``in_grace``, ``late``, ``late_no_time``,
    ``no_time``, ``unreadable``, ``no_deadline``, ``missing``) and ``note`` (a
    sentence for the CSV, the summary and the feedback page). With an
    ``extension`` (seconds, nbgrader's per-student extension) the learner's
    deadline is ``deadline`` plus it, and the record keeps it as ``extension``.
    """
    out: Late = {
        "submitted_at": None,
        "source": timestamp_source if timestamp else None,
        "deadline": policy.deadline.astimezone(UTC).isoformat() if policy.deadline else None,
        "seconds_late": 0.0,
        "periods": 0,
        "penalty": 0.0,
        "raw_score": raw_score,
        "final_score": raw_score,
        "status": "",
        "note": "",
        "timezone": zone_name(policy.timezone),
    }
    if extension:
        out["extension"] = float(extension)
    if not submitted:
        out.update({"status": "missing", "source": None})
        return out
    when = None
    if timestamp:
        try:
            when = parse_time(timestamp, policy.timezone, source=f"the submission time in {timestamp_source}")
            out["submitted_at"] = when.astimezone(UTC).isoformat()
        except TimestampError as exc:
            if policy.deadline is not None:  # without a deadline the time does not matter
                note = f"{exc}; no late penalty was computed: check this submission's time by hand"
                out.update({"status": "unreadable", "note": note})
                return out
    if policy.deadline is None:
        out["status"] = "no_deadline"
        return out
    deadline = policy.deadline + dt.timedelta(seconds=extension)
    charged = _lateness(policy, deadline, when, lms_late, out)
    if charged is not None:
        _charge(policy, out, *charged, raw_score=raw_score, max_score=max_score)
    if extension:
        granted = (
            f"an extension of {human(extension)} was granted (deadline for this submission "
            f"{deadline.astimezone(policy.timezone).strftime('%Y-%m-%d %H:%M %Z')})"
        )
        out["note"] = f"{granted}; {out['note']}" if out["note"] else granted
    return out


def _lateness(
    policy: Policy, deadline: dt.datetime, when: dt.datetime | None, lms_late: bool | None, out: Late
) -> tuple[int, str] | None:
    """Set ``out``'s status; ``(started periods, why)`` when lateness costs, else None."""
    if when is None:
        if lms_late is False:
            note = "the LMS did not mark it late (its export gives no time)"
            out.update({"status": "on_time", "source": "LMS", "note": note})
            return None
        if not lms_late:
            note = "the export records no submission time: no late penalty was computed (give times with --timestamps)"
            out.update({"status": "no_time", "note": note})
            return None
        out.update({"status": "late_no_time", "seconds_late": None})
        why = f"the LMS marked it LATE but its export gives no time: charged one {policy.period}, the least a late "
        return 1, why + "submission costs"
    seconds = (when - deadline).total_seconds()
    if seconds <= 0:
        out["status"] = "on_time"
        return None
    out["seconds_late"] = seconds
    if seconds <= policy.grace_seconds:
        note = (
            f"submitted {human(seconds)} after the deadline, within the grace period "
            f"of {human(policy.grace_seconds)}: no penalty"
        )
        out.update({"status": "in_grace", "note": note})
        return None
    periods = math.ceil(seconds / PERIODS[policy.period])
    out["status"] = "late"
    return (
        periods,
        f"submitted {human(seconds)} after the deadline ({periods} started {policy.period}{'s' * (periods != 1)})",
    )


def _charge(policy: Policy, out: Late, periods: int, why: str, *, raw_score: float, max_score: float) -> None:
    """Put the penalty of ``periods`` started periods in ``out``, bounded by the cap and the raw score."""
    penalty = periods * policy.penalty.points(max_score)
    capped = ""
    if policy.cap is not None and penalty > policy.cap.points(max_score):
        penalty, capped = policy.cap.points(max_score), f", capped at {policy.cap}"
    if penalty > max(raw_score, 0.0):  # as nbgrader: never below a score of 0
        penalty, capped = max(raw_score, 0.0), capped + ", limited to the raw score"
    penalty = round(penalty, 6)
    out.update(
        {
            "periods": periods,
            "penalty": penalty,
            "final_score": round(raw_score - penalty, 6),
            "note": f"{why}: late penalty {penalty:g} point{'s' * (penalty != 1)}{capped}",
        }
    )


def human(seconds: float) -> str:
    """``90 -> '1 min 30 s'``, ``93784 -> '1 d 2 h 3 min'`` (seconds only below an hour)."""
    s = int(round(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    parts = [f"{d} d"] * bool(d) + [f"{h} h"] * bool(h) + [f"{m} min"] * bool(m)
    if not d and not h:
        parts += [f"{s} s"] * bool(s)
    return " ".join(parts) or "0 s"


def with_gradebook_duedate(policy: Policy, duedate: dt.datetime | None) -> Policy:
    """Without a configured deadline, nbgrader's own due date (``nbgrader db assignment add
    --duedate``, naive UTC in the gradebook) is the deadline."""
    if policy.deadline is not None or duedate is None:
        return policy
    aware = duedate.replace(tzinfo=UTC) if duedate.tzinfo is None else duedate
    return dataclasses.replace(policy, deadline=aware)


def annotate(result: Result, sub: Any, policy: Policy) -> bool:
    """Set ``result["late"]`` for the submission ``sub`` (an :class:`~classgrader.pipeline.intake.Submission`).

    Returns True when it changed (a new deadline, penalty or timestamp), so a
    cached result can be written again.
    """
    old = result.get("late")
    result["late"] = assess(
        policy,
        raw_score=float(result.get("score") or 0.0),
        max_score=float(result.get("max_score") or 0.0),
        timestamp=sub.timestamp,
        timestamp_source=sub.timestamp_source or "timestamp.txt",
        lms_late=sub.lms_late,
        submitted=sub.path is not None,
        extension=getattr(sub, "extension", 0.0),
    )
    return result["late"] != old


def reprice_saved(result: Result, policy: Policy, extension: float = 0.0) -> bool:
    """Re-price a saved result whose submission is not in this run's folder, from the time its late record
    keeps (or the LMS's word it recorded); True when it changed. Its raw score is kept."""
    old = late_of(result)
    if not old or old.get("status") in ("missing", "unreadable"):  # nothing to price, or a time to check by hand
        return False
    status, source = old.get("status"), old.get("source")
    result["late"] = assess(
        policy,
        raw_score=float(result.get("score") or 0.0),
        max_score=float(result.get("max_score") or 0.0),
        timestamp=old.get("submitted_at"),
        timestamp_source=str(source or "timestamp.txt"),
        lms_late=True if status == "late_no_time" else (False if source == "LMS" else None),
        extension=extension,
    )
    return result["late"] != old


def late_of(result: Result) -> Late | dict[str, Any]:
    """The result's late record, or ``{}`` when no policy was applied to it."""
    return result.get("late") or {}


def final_score(result: Result) -> float:
    """The score after the late penalty (the raw score when no policy applies)."""
    return float(late_of(result).get("final_score", result.get("score") or 0.0))


def penalty_of(result: Result) -> float:
    """The points the late penalty took off (0 when none)."""
    return float(late_of(result).get("penalty") or 0.0)
