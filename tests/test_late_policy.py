"""The late-submission policy: reading submission times, and what lateness costs.

Expected values are worked out by hand in each test from the policy's rules
(every started period costs the penalty, nothing within the grace period, at
most the cap, never below a score of 0), not read from the code.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from classgrader import settings
from classgrader.after_deadline import late
from classgrader.pipeline import intake

UTC = dt.UTC
BERLIN = late.zone("Europe/Berlin")


def policy(**settings) -> late.Policy:
    settings.setdefault("deadline", "2026-03-01 23:59:00")
    return late.make_policy("hw2_stable_softmax", settings)


def cost(p: late.Policy, stamp: str | None, raw: float = 10.0, **kw) -> dict:
    return late.assess(p, raw_score=raw, max_score=10.0, timestamp=stamp, **kw)


# ---------------------------------------------------------------- reading times


@pytest.mark.parametrize(
    "text, utc",
    [
        ("2026-03-01 22:59:59.123456 UTC", "2026-03-01T22:59:59.123456+00:00"),  # nbgrader's timestamp.txt
        ("2026-03-01 23:59:59 Europe/Berlin", "2026-03-01T22:59:59+00:00"),  # CET is UTC+1 in March
        ("2026-07-01 23:59:59 Europe/Berlin", "2026-07-01T21:59:59+00:00"),  # CEST is UTC+2 in July
        ("2026-03-01T23:59:59+01:00", "2026-03-01T22:59:59+00:00"),
        ("2026-03-01T22:59:59Z", "2026-03-01T22:59:59+00:00"),
        ("2026-03-01 23:59:59 -05:00", "2026-03-02T04:59:59+00:00"),
    ],
)
def test_times_with_a_zone_are_read_in_that_zone(text, utc):
    assert late.parse_time(text, BERLIN).astimezone(UTC).isoformat() == utc


def test_a_time_without_a_zone_is_taken_in_the_policy_zone():
    assert late.parse_time("2026-03-01 12:00:00", BERLIN).astimezone(UTC).hour == 11
    assert late.parse_time("2026-03-01 12:00:00", UTC).astimezone(UTC).hour == 12
    # Blackboard's file-name date, local time without a zone
    assert late.parse_time("2026-03-01-12-00-00", BERLIN).astimezone(UTC).hour == 11


@pytest.mark.parametrize(
    "text, words",
    [
        ("yesterday evening", "is not a date and time"),
        ("2026-03-01 10:00:00 Mars/Olympus", "ends with an unknown time zone 'Mars/Olympus'"),
        ("not-a-date", "is not a date and time"),
        ("2026-13-45 10:00:00 UTC", "is not a date and time"),
        ("", "is empty"),
        ("2026-03-01T10:00:00+01:00 UTC", "gives its time zone twice"),
    ],
)
def test_bad_timestamp_text_gives_a_clear_message(text, words):
    with pytest.raises(late.TimestampError) as info:
        late.parse_time(text, UTC, source="the submission time in alice/hw2/timestamp.txt")
    assert words in str(info.value)
    assert "alice/hw2/timestamp.txt" in str(info.value)


def test_a_bad_timestamp_costs_nothing_and_says_so():
    out = cost(policy(penalty="10%"), "31/02/2026 nonsense", timestamp_source="alice/hw2/timestamp.txt")
    assert out["status"] == "unreadable" and out["penalty"] == 0 and out["final_score"] == 10
    assert "alice/hw2/timestamp.txt" in out["note"] and "'31/02/2026 nonsense'" in out["note"], out["note"]
    assert "by hand" in out["note"]  # what the instructor should do


@pytest.mark.parametrize(
    "settings, words",
    [
        ({"deadline": "next friday"}, "the deadline of hw2_stable_softmax"),
        ({"timezone": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
        ({"penalty": "ten"}, "LatePolicy.penalty 'ten'"),
        ({"penalty": "-5"}, "must be 0 or more"),
        ({"period": "week"}, "'day' or 'hour'"),
        ({"grace": "a while"}, "LatePolicy.grace 'a while' is not a duration"),
        ({"cap": "50 percent"}, "LatePolicy.cap"),
        ({"dedline": "2026-03-01"}, "unknown late-policy setting(s) dedline"),
    ],
)
def test_a_bad_policy_setting_names_itself(settings, words):
    with pytest.raises(late.LatePolicyError) as info:
        late.make_policy("hw2_stable_softmax", {"deadline": "2026-03-01 23:59", **settings})
    assert words in str(info.value)


# ---------------------------------------------------------------- the penalty


def test_exactly_at_the_deadline_is_on_time_and_one_microsecond_later_is_late():
    p = policy(penalty="1", period="hour")
    assert cost(p, "2026-03-01 23:59:00 UTC")["status"] == "on_time"
    just = cost(p, "2026-03-01 23:59:00.000001 UTC")
    assert just["status"] == "late" and just["periods"] == 1 and just["penalty"] == 1 and just["final_score"] == 9


def test_every_started_period_costs_the_penalty():
    p = policy(penalty="10%", period="day")  # 1 point of 10 per started day
    assert cost(p, "2026-03-02 23:59:00 UTC")["penalty"] == 1  # exactly 24 h late: one day
    assert cost(p, "2026-03-02 23:59:01 UTC")["penalty"] == 2  # 24 h and 1 s: a second day started
    hourly = policy(penalty="0.5", period="hour")
    out = cost(hourly, "2026-03-02 02:30:00 UTC")  # 2 h 31 min late: 3 started hours
    assert out["periods"] == 3 and out["penalty"] == 1.5 and out["final_score"] == 8.5


def test_the_grace_period_is_free_and_lateness_after_it_counts_from_the_deadline():
    p = policy(penalty="1", period="hour", grace="15m")
    inside = cost(p, "2026-03-02 00:14:00 UTC")  # 15 min late: the edge of grace
    assert inside["status"] == "in_grace" and inside["penalty"] == 0 and "grace period" in inside["note"]
    edge = cost(p, "2026-03-02 00:14:00.5 UTC")
    assert edge["status"] == "late" and edge["periods"] == 1 and edge["penalty"] == 1
    later = cost(p, "2026-03-02 01:30:00 UTC")  # 1 h 31 min after the deadline: 2 hours
    assert later["periods"] == 2 and later["penalty"] == 2


def test_the_cap_and_the_score_bound_the_penalty():
    p = policy(penalty="20%", period="day", cap="50%")
    week = cost(p, "2026-03-08 12:00:00 UTC")  # 7 started days: 14 points, capped at 5
    assert week["periods"] == 7 and week["penalty"] == 5 and week["final_score"] == 5 and "capped" in week["note"]
    low = cost(p, "2026-03-08 12:00:00 UTC", raw=3.0)  # never below 0 (nbgrader's rule)
    assert low["penalty"] == 3 and low["final_score"] == 0 and "limited to the raw score" in low["note"]


def test_the_deadline_zone_and_the_timestamp_zone_are_compared_as_instants():
    # Deadline 23:59 in Berlin is 22:59 UTC; nbgrader wrote 23:30 UTC: 31 min late.
    p = policy(timezone="Europe/Berlin", penalty="1", period="hour")
    out = cost(p, "2026-03-01 23:30:00 UTC")
    assert out["status"] == "late" and out["seconds_late"] == 31 * 60
    assert out["deadline"] == "2026-03-01T22:59:00+00:00" and out["submitted_at"] == "2026-03-01T23:30:00+00:00"
    assert cost(p, "2026-03-01 23:30:00")["status"] == "on_time"  # naive: Berlin time, 29 min early


def test_without_a_deadline_nothing_is_late():
    p = late.make_policy("hw2_stable_softmax", {"penalty": "50%"})
    out = cost(p, "2030-01-01 00:00:00 UTC")
    assert out["status"] == "no_deadline" and out["penalty"] == 0 and out["note"] == ""


def test_an_extension_moves_one_learners_deadline_as_nbgrader_counts_it():
    """nbgrader's SubmittedAssignment adds its ``extension`` to the assignment's due date
    (``duedate``, ``total_seconds_late``); the policy counts the same seconds late."""
    from nbgrader.api import Assignment, SubmittedAssignment

    p = policy(penalty="1", period="day")  # deadline 2026-03-01 23:59 UTC
    stamp, days = "2026-03-04 12:00:00 UTC", 2  # 2 d 12 h 1 min late; 12 h 1 min after the extended deadline
    theirs = SubmittedAssignment(
        assignment=Assignment(name="hw2_stable_softmax", duedate=dt.datetime(2026, 3, 1, 23, 59)),
        timestamp=dt.datetime(2026, 3, 4, 12, 0),
        extension=dt.timedelta(days=days),
    )
    extended = cost(p, stamp, extension=days * 86400.0)
    assert extended["seconds_late"] == theirs.total_seconds_late
    assert extended["periods"] == 1 and extended["penalty"] == 1 and cost(p, stamp)["penalty"] == 3
    assert extended["extension"] == days * 86400 and extended["deadline"] == "2026-03-01T23:59:00+00:00"
    on_time = cost(p, "2026-03-03 23:00:00 UTC", extension=days * 86400.0)
    assert on_time["status"] == "on_time" and on_time["penalty"] == 0 and on_time["note"]  # the note names it


def test_nbgraders_own_due_date_is_the_deadline_when_none_is_configured():
    from_gradebook = late.with_gradebook_duedate(late.make_policy("hw2", {"penalty": "1"}), dt.datetime(2026, 3, 1, 12))
    assert from_gradebook.deadline == dt.datetime(2026, 3, 1, 12, tzinfo=UTC)  # naive UTC, as nbgrader stores it
    assert cost(from_gradebook, "2026-03-01 12:30:00 UTC")["penalty"] == 1
    configured = policy(penalty="1")
    assert late.with_gradebook_duedate(configured, dt.datetime(2020, 1, 1)) is configured


def test_lms_exports_canvas_late_marker_blackboard_date_moodle_nothing():
    p = policy(penalty="10%", timezone="Europe/Berlin")
    canvas = cost(p, None, lms_late=True)
    assert canvas["status"] == "late_no_time" and canvas["penalty"] == 1 and "no time" in canvas["note"]
    canvas_on_time = cost(p, None, lms_late=False)
    assert canvas_on_time["status"] == "on_time" and canvas_on_time["penalty"] == 0
    assert "did not mark it late" in canvas_on_time["note"]
    moodle = cost(p, None)
    assert moodle["status"] == "no_time" and moodle["penalty"] == 0 and "--timestamps" in moodle["note"]
    stamp, marked = intake.lms_time("Homework 2_jsmith_attempt_2026-03-02-01-00-00_hw2_stable_softmax.ipynb")
    assert (stamp, marked) == ("2026-03-02-01-00-00", None)
    bb = cost(p, stamp, timestamp_source="Blackboard")  # 01:00 Berlin = 1 h 1 min late: 1 day
    assert bb["status"] == "late" and bb["seconds_late"] == 61 * 60 and bb["penalty"] == 1
    assert intake.lms_time("doejohn_LATE_222_333_hw2_stable_softmax-1.ipynb") == (None, True)
    assert intake.lms_time("smithjane_101_9001_hw2_stable_softmax.ipynb") == (None, False)
    assert intake.lms_time("Ada Lovelace_103_assignsubmission_file_hw2.ipynb") == (None, None)


def test_lms_times_reach_the_submissions(tmp_path):
    for name in (
        "smithjane_101_9001_hw2_stable_softmax.ipynb",
        "doejohn_LATE_102_9002_hw2_stable_softmax-1.ipynb",
        "Homework 2_jsmith_attempt_2026-03-02-01-00-00_hw2_stable_softmax.ipynb",
    ):
        (tmp_path / name).write_text("{}")
    folder = tmp_path / "Ada Lovelace_103_assignsubmission_file_"
    folder.mkdir()
    (folder / "my_softmax.ipynb").write_text("{}")
    subs = {s.student: s for s in intake.discover(tmp_path, "hw2_stable_softmax", "hw2_stable_softmax.ipynb")}
    assert (subs["101"].timestamp, subs["101"].lms_late) == (None, False)
    assert (subs["102"].timestamp, subs["102"].lms_late) == (None, True)
    assert subs["jsmith"].timestamp == "2026-03-02-01-00-00" and "attempt" in subs["jsmith"].timestamp_source
    assert (subs["103"].timestamp, subs["103"].lms_late) == (None, None)


def test_policy_from_the_grader_settings_and_a_timestamps_file(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.LatePolicy.deadlines = {'hw2_stable_softmax': '2026-03-01 23:59'}\n"
        "c.LatePolicy.timezone = 'Europe/Berlin'\n"
        "c.LatePolicy.penalty = '10%'\nc.LatePolicy.grace = '15m'\nc.LatePolicy.cap = '30%'\n"
    )
    course = settings.read(tmp_path)
    p = late.policy_of(course.late, "hw2_stable_softmax")
    assert p.deadline == dt.datetime(2026, 3, 1, 22, 59, tzinfo=UTC)
    assert p.grace_seconds == 900 and p.penalty == late.Amount(10, True) and p.cap == late.Amount(30, True)
    assert late.policy_of(course.late, "hw3_queries_keys_values").deadline is None
    given = settings.read(tmp_path, {"LatePolicy.penalty": "2", "LatePolicy.grace": None})
    override = late.policy_of(given.late, "hw2_stable_softmax")
    assert override.penalty == late.Amount(2, False) and override.grace_seconds == 900
    csv_file = tmp_path / "times.csv"
    csv_file.write_text("student_id,name,submitted_at\nalice,Alice,2026-03-02 10:00 UTC\n")
    assert late.read_timestamps_file(csv_file) == {"alice": "2026-03-02 10:00 UTC"}
    (tmp_path / "bad.csv").write_text("id,time\nalice,now\n")
    with pytest.raises(late.LatePolicyError, match="student_id and submitted_at"):
        late.read_timestamps_file(tmp_path / "bad.csv")


def test_the_cli_refuses_a_bad_policy_with_a_clear_message(capsys):
    from classgrader import cli

    code = cli.main(
        [
            "hw2_stable_softmax",
            str(Path(__file__).parent),
            "--course",
            str(Path(__file__).resolve().parents[1]),
            "--deadline",
            "soon",
            "--no-sandbox",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert all(named in err for named in ("late policy", "deadline", "hw2_stable_softmax", "'soon'")), err
