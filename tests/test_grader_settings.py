"""The class grader's settings: declared once (classgrader/settings.py), read once per run.

The learner's kernel reads only the secret file's name (sdpa_course/grading/seeds.py);
the command-line options of ``./course grade`` come from the declarations and
win over the file; a bad value, in the file or on the command line, is an
error that names the setting.
"""

from __future__ import annotations

import ast
import datetime as dt
import re
import subprocess
import sys
from pathlib import Path

import pytest

from classgrader import cli, settings
from classgrader.setting_values import Amount
from classgrader.settings import ClassGrader, ConfigError, CourseGrading, LatePolicy
from sdpa_course.grading import seeds

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "hw2_stable_softmax"
GIB = 1024 * 1024 * 1024


def write_config(folder: Path, *lines: str) -> Path:
    (folder / "nbgrader_config.py").write_text("c = get_config()\n" + "".join(f"{line}\n" for line in lines))
    return folder


def test_the_learners_kernel_reads_the_secret_file_named_in_the_config_without_the_grader(tmp_path):
    (tmp_path / "secret.txt").write_text("s3cret\n")
    write_config(tmp_path, 'c.CourseGrading.secret_file = "secret.txt"', 'c.LatePolicy.penalty = "10%"')
    code = (
        "import sys; from pathlib import Path; from sdpa_course.grading import seeds; "
        f"print(seeds.course_secret(Path({str(tmp_path)!r}))[0].decode()); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'nbconvert', 'nbgrader', 'classgrader'}))"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no COURSE_GRADING_SECRET: the file is read
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["s3cret", "[]"]
    # The grader reads the same line, declared once in its settings, and passes it down.
    assert (CourseGrading.__name__, CourseGrading.class_trait_names(config=True)) == (
        seeds.SECTION,
        [seeds.SECRET_FILE],
    )
    assert settings.read(tmp_path).grading.secret_file == "secret.txt"


def test_a_secret_file_setting_that_is_not_a_name_is_an_error_naming_it_in_the_learners_kernel(tmp_path):
    write_config(tmp_path, "c.CourseGrading.secret_file = 3")
    with pytest.raises(seeds.SecretMissing, match=r"CourseGrading.secret_file in .*nbgrader_config.py .*not 3"):
        seeds.secret_file_named(tmp_path)
    with pytest.raises(ConfigError, match=r"CourseGrading.secret_file must be a unicode string, not 3 in "):
        settings.read(tmp_path)


def test_the_learners_reader_imports_only_the_standard_library_and_traitlets():
    # numpy, nbconvert, nbgrader and the grader stay out of it, whatever the grading package imports.
    tree = ast.parse((REPO / "sdpa_course" / "grading" / "seeds.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add("." + (node.module or "") if node.level else (node.module or "").split(".")[0])
    outside = {name for name in imported if name not in sys.stdlib_module_names}
    assert outside <= {"traitlets"}, outside


def test_the_course_id_is_nbgraders_course_directory_setting(tmp_path):
    from nbgrader.coursedir import CourseDirectory as NbgraderCourseDirectory

    ours = settings.CourseDirectory.class_traits()["course_id"]
    theirs = NbgraderCourseDirectory.class_traits()["course_id"]
    assert type(ours) is type(theirs) and ours.default_value == theirs.default_value == ""
    write_config(tmp_path, 'c.CourseDirectory.course_id = " demo "', 'c.CourseDirectory.root = "."')
    course_id = NbgraderCourseDirectory(course_id=" demo ").course_id
    assert settings.read(tmp_path).course_id == course_id == "demo"
    assert settings.read(tmp_path / "nowhere").course_id == "default_course"  # nbgrader's name for no id
    assert settings.read(REPO).course_id == "sdpa-course"


def test_the_file_is_read_and_the_command_line_wins(tmp_path):
    write_config(
        tmp_path,
        "c.ClassGrader.timeout = 5",
        'c.ClassGrader.memory = "1g"',
        'c.ClassGrader.sandbox = "userns"',
        "c.LatePolicy.deadlines = {'hw2_stable_softmax': '2026-03-01 23:59'}",
        'c.LatePolicy.timezone = "Europe/Berlin"',
        'c.LatePolicy.penalty = "10%"',
        'c.LatePolicy.period = "per Hour"',
        'c.LatePolicy.grace = "15m"',
    )
    from_file = settings.read(tmp_path)
    assert (from_file.grader.timeout, from_file.grader.memory, from_file.grader.sandbox) == (5.0, GIB, "userns")
    late = from_file.late
    assert late.deadlines == {ASSIGNMENT: "2026-03-01 23:59"} and late.deadline is None and late.cap is None
    assert late.timezone.utcoffset(dt.datetime(2026, 3, 1)) == dt.timedelta(hours=1)
    assert (late.penalty, late.period, late.grace) == (Amount(10, True), "hour", 900.0)
    args = cli.parser().parse_args(
        [ASSIGNMENT, "subs", "--timeout", "7", "--memory", "512m", "--penalty", "2", "--cap", "50%"]
    )
    given = cli.overrides(args)
    assert given == {
        "ClassGrader.timeout": 7.0,
        "ClassGrader.memory": "512m",
        "LatePolicy.penalty": "2",
        "LatePolicy.cap": "50%",
    }
    both = settings.read(tmp_path, given)
    assert (both.grader.timeout, both.grader.memory, both.grader.sandbox) == (7.0, 512 * 1024 * 1024, "userns")
    assert (both.late.penalty, both.late.cap, both.late.grace) == (Amount(2, False), Amount(50, True), 900.0)


def test_every_setting_with_an_option_keeps_its_name_and_shows_its_help_and_default():
    p = cli.parser()
    options = {a.option_strings[0]: a for a in p._actions if a.option_strings}
    for name in ("--timeout", "--memory", "--sandbox", "--deadline", "--timezone", "--penalty", "--period", "--grace"):
        assert name in options
    assert "--cap" in options
    for cls in (ClassGrader, LatePolicy):
        for name, trait in cls.class_traits(option=True).items():
            action = options[f"--{name}"]
            assert trait.help.replace("%", "%%") in action.help
            assert f"c.{cls.__name__}.{name}" in action.help
    assert "(default 60;" in options["--timeout"].help and "(default 2g;" in options["--memory"].help
    assert list(options["--sandbox"].choices) == ["auto", "root", "userns"]
    assert list(options["--period"].choices) == ["day", "hour"]
    assert "deadlines" not in options and "--secret_file" not in options  # settings for the file only


def test_a_bad_value_in_the_file_names_the_setting_and_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "known_assignments", lambda course: [ASSIGNMENT])
    write_config(tmp_path, 'c.ClassGrader.memory = "lots"')
    assert cli.main([ASSIGNMENT, str(tmp_path), "--course", str(tmp_path), "--no-sandbox"]) == 2
    err = capsys.readouterr().err
    assert all(named in err for named in ("ClassGrader.memory", "'lots'", str(tmp_path / "nbgrader_config.py"))), err
    write_config(tmp_path, 'c.LatePolicy.cap = "half"')
    with pytest.raises(ConfigError, match=r"LatePolicy.cap 'half' is not a number of points or a percentage"):
        settings.read(tmp_path)
    write_config(tmp_path, "c.ClassGrader.timout = 5")
    with pytest.raises(ConfigError, match=r"unknown ClassGrader setting\(s\) timout .*known: memory, sandbox, timeout"):
        settings.read(tmp_path)


def test_a_bad_value_on_the_command_line_names_the_option(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([ASSIGNMENT, str(tmp_path), "--course", str(REPO), "--timeout", "0"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --timeout:" in err and "above 0, not 0.0" in err, err
    with pytest.raises(SystemExit) as exit_:
        cli.main([ASSIGNMENT, str(tmp_path), "--course", str(REPO), "--grace", "a while"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --grace:" in err and "'a while'" in err, err


def test_the_grading_run_gets_the_files_settings_under_the_command_lines(tmp_path, monkeypatch):
    from classgrader.pipeline import class_run

    monkeypatch.setenv("COURSE_GRADING_SECRET", "test-secret")
    monkeypatch.setattr(cli, "known_assignments", lambda course: [ASSIGNMENT])
    seen = {}

    def grade_class(course, assignment, submissions, **kwargs):
        seen.update(kwargs)
        return {"reports": str(tmp_path / "reports")}

    monkeypatch.setattr(class_run, "grade_class", grade_class)
    monkeypatch.setattr(cli, "summary_text", lambda summary: "")
    write_config(
        tmp_path,
        "c.ClassGrader.timeout = 5",
        'c.ClassGrader.sandbox = "userns"',
        "c.LatePolicy.deadlines = {'hw2_stable_softmax': '2026-03-01 23:59'}",
        'c.LatePolicy.penalty = "1"',
    )
    assert cli.main([ASSIGNMENT, str(tmp_path), "--course", str(tmp_path), "--memory", "1g", "--quiet"]) == 0
    run, policy = seen["settings"], seen["late_policy"]
    assert (run.limits.wall_seconds, run.limits.memory_bytes, run.sandbox_mode) == (5.0, GIB, "userns")
    assert run.sandboxed and run.kernel_record
    assert policy.deadline == dt.datetime(2026, 3, 1, 23, 59, tzinfo=dt.UTC) and policy.penalty == Amount(1, False)
    assert seen["course_settings"].grader.timeout == 5.0  # what was read is passed down, not read again


def test_the_guides_lines_for_the_class_grader_are_read_as_it_says(tmp_path):
    text = (REPO / "solution_book" / "guide_grader.md").read_text(encoding="utf-8")
    lines = re.findall(r"`(c\.ClassGrader\.\w+ = [^`]+)`", text)
    assert len(lines) == 3, lines
    grader = settings.read(write_config(tmp_path, *lines)).grader
    assert (grader.timeout, grader.memory, grader.sandbox) == (120.0, 4 * GIB, "userns")


LMS_MAPPING = 'student_id,canvas_id,name\nada,1001,"Lovelace, Ada"\n'


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('c.LmsExport.missing_as_zero = "yes"', "LmsExport.missing_as_zero must be a boolean, not 'yes'"),
        ('c.LmsExport.titles = ["Homework 2"]', "LmsExport.titles must be a dict mapping assignment names to column"),
        ("c.LmsExport.roster = 3", "LmsExport.roster must be a file's path, not 3"),
        ("c.Feedback.book_url = 3", "Feedback.book_url must be a web address"),
        ('c.Feedback.book_url = "my book"', "Feedback.book_url must be a web address .* not 'my book'"),
        ("c.Feedback.book_ur = 'https://example.org/b'", r"unknown Feedback setting\(s\) book_ur .*known: book_url"),
    ],
)
def test_a_bad_lms_or_feedback_value_in_the_file_names_the_setting_and_the_file(tmp_path, line, message):
    write_config(tmp_path, line)
    with pytest.raises(ConfigError, match=message) as raised:
        settings.read(tmp_path)
    assert str(tmp_path / "nbgrader_config.py") in str(raised.value)


def test_a_bad_lms_or_feedback_value_stops_the_run_before_grading(tmp_path, capsys, monkeypatch):
    from classgrader.pipeline import class_run

    monkeypatch.setattr(cli, "known_assignments", lambda course: [ASSIGNMENT])
    monkeypatch.setattr(class_run, "grade_class", lambda *a, **k: pytest.fail("graded despite a bad setting"))
    write_config(tmp_path, 'c.LmsExport.titles = "Homework 2"')
    assert cli.main([ASSIGNMENT, str(tmp_path), "--course", str(tmp_path), "--no-sandbox"]) == 2
    config = str(tmp_path / "nbgrader_config.py")
    err = capsys.readouterr().err
    assert "LmsExport.titles" in err and config in err, err
    write_config(tmp_path, "c.Feedback.book_url = ['https://example.org/b']")
    assert cli.main([ASSIGNMENT, str(tmp_path), "--course", str(tmp_path), "--no-sandbox"]) == 2
    err = capsys.readouterr().err
    assert all(named in err for named in ("Feedback.book_url", "['https://example.org/b']", config)), err


def test_the_lms_options_keep_their_names_and_show_their_settings():
    options = {a.option_strings[0]: a for a in cli.parser()._actions if a.option_strings}
    roster, zero = options["--lms-roster"], options["--missing-as-zero"]
    assert roster.default is None and zero.default is None and zero.nargs == 0  # a flag: no value
    assert "c.LmsExport.roster" in roster.help and "c.LmsExport.missing_as_zero" in zero.help
    assert "--roster" in options and options["--roster"].dest == "roster"  # the class roster stays its own option
    assert "--titles" not in options  # a setting for the file only


def test_the_lms_settings_come_from_the_file_and_the_command_line_wins(tmp_path, monkeypatch):
    from classgrader.pipeline import class_run

    course, here = tmp_path / "course", tmp_path / "here"
    course.mkdir()
    here.mkdir()
    (course / "lms_roster.csv").write_text(LMS_MAPPING)
    (here / "lms_roster.csv").write_text(LMS_MAPPING.replace("1001", "2002"))
    write_config(
        course,
        "c.LmsExport.roster = 'lms_roster.csv'",
        "c.LmsExport.titles = {'hw2_stable_softmax': 'Homework 2'}",
        "c.LmsExport.missing_as_zero = False",
    )
    monkeypatch.setenv("COURSE_GRADING_SECRET", "test-secret")
    monkeypatch.setattr(cli, "known_assignments", lambda course: [ASSIGNMENT])
    monkeypatch.setattr(cli, "summary_text", lambda summary: "")
    seen = []
    monkeypatch.setattr(class_run, "grade_class", lambda *a, **kwargs: seen.append(kwargs["lms"]) or {"reports": ""})
    monkeypatch.chdir(here)  # a file named on the command line is in the current folder, one in the config the course's
    argv = [ASSIGNMENT, str(course), "--course", str(course), "--quiet"]
    assert cli.main(argv) == 0
    assert cli.main([*argv, "--lms-roster", "lms_roster.csv", "--missing-as-zero"]) == 0
    from_file, from_line = seen
    assert from_file.title == from_line.title == "Homework 2"
    assert (from_file.mapping["ada"].canvas_id, from_file.missing_as_zero) == ("1001", False)
    assert (from_line.mapping["ada"].canvas_id, from_line.missing_as_zero) == ("2002", True)
    assert cli.overrides(cli.parser().parse_args([*argv, "--lms-roster", "x.csv"])) == {
        "LmsExport.roster": str(here / "x.csv")
    }


def test_the_guides_lines_for_the_lms_files_and_the_feedback_are_read_as_it_says(tmp_path):
    text = (REPO / "solution_book" / "guide_grader.md").read_text(encoding="utf-8")
    lines = re.findall(r"^(c\.(?:LmsExport|Feedback)\.\w+ = .+?)(?:\s+#.*)?$", text, flags=re.M)
    assert len(lines) == 4, lines
    (tmp_path / "lms_roster.csv").write_text(LMS_MAPPING)
    read = settings.read(write_config(tmp_path, *lines))
    assert read.feedback.book_url == "https://example.org/attention-course/"
    assert read.lms.titles == {ASSIGNMENT: "Homework 2"} and read.lms.missing_as_zero is False
    assert (tmp_path / read.lms.roster).read_text() == LMS_MAPPING
