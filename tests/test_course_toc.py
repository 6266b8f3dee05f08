"""Dropping a chapter or a homework is one edit of ``_toc.yml``, and the book still builds.

``_ext/course_toc.py`` makes the welcome page's map from ``_toc.yml`` and
``chapters/course_map.yml``, and turns links to pages left out of the table of
contents into their plain titles. Tested on a small book of its own (fast),
and on a copy of the whole course with chapter 9 and homework 9 removed, built
as ``./course build`` builds it, with warnings as errors (slow: it executes
every chapter that the repository's execution cache has not seen). The map's
times come from ``_ext/study_time.py``, whose counts are checked on small
pages written here and whose minutes on those counts, by hand.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from course_copy import REPO, copy_course, env_for
from myst_page import HEADER

sys.path.insert(0, str(REPO / "_ext"))
import study_time  # noqa: E402
from course_toc import homework_title, hours, map_rows, toc_files  # noqa: E402


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def drop(toc_path: Path, *files: str) -> None:
    text = toc_path.read_text(encoding="utf-8")
    for name in files:
        line = f"      - file: {name}\n"
        assert text.count(line) == 1, name
        text = text.replace(line, "")
    toc_path.write_text(text, encoding="utf-8")


def test_every_chapter_of_the_table_of_contents_has_its_map_entry():
    in_toc = toc_files(REPO / "_toc.yml")
    entries = yaml.safe_load((REPO / "chapters" / "course_map.yml").read_text(encoding="utf-8"))
    rows = map_rows(entries, in_toc)
    chapters = [d for d in in_toc if d.startswith("chapters/") and d != "chapters/00_welcome"]
    assert [chapter for _, chapter, _ in rows] == chapters and len(rows) == 12
    assert [number for number, _, _ in rows] == [str(i) for i in range(1, 13)]
    homework = {chapter: hw for _, chapter, hw in rows if hw}
    assert len(homework) == 12 and all(hw in in_toc for hw in homework.values())
    assert homework["chapters/01_self_attention"] == "exercises/hw2_stable_softmax/hw2_stable_softmax"


def test_the_map_follows_a_reordered_table_of_contents_and_keeps_each_chapters_number():
    entries = [
        {"chapter": "01_a", "question": "a?", "homework": "hw1_a"},
        {"chapter": "02_b", "question": "b?", "homework": "hw2_b"},
        {"chapter": "10_c", "question": "c?"},
    ]
    toc = ["intro", "chapters/00_welcome", "chapters/10_c", "chapters/01_a", "exercises/hw2_b/hw2_b"]
    assert map_rows(entries, toc) == [("10", "chapters/10_c", ""), ("1", "chapters/01_a", "")]
    toc.append("chapters/02_b")
    assert map_rows(entries, toc)[-1] == ("2", "chapters/02_b", "exercises/hw2_b/hw2_b")


def test_a_chapter_without_a_map_entry_is_named():
    with pytest.raises(ValueError, match="chapters/03_new is in _toc.yml but has no entry"):
        map_rows([{"chapter": "01_a", "question": "q"}], ["intro", "chapters/01_a", "chapters/03_new"])


def small_book(root: Path) -> Path:
    """Two chapters with a homework notebook each; the second chapter links the first and its homework."""
    config = {
        "title": "small",
        "execute": {"execute_notebooks": "off"},
        "only_build_toc_files": True,
        "sphinx": {"local_extensions": {"course_toc": str(REPO / "_ext")}},
    }
    write(root / "_config.yml", yaml.safe_dump(config))
    toc = (
        "format: jb-book\nroot: intro\nparts:\n  - caption: Chapters\n    chapters:\n"
        "      - file: chapters/00_welcome\n      - file: chapters/01_first\n      - file: chapters/02_second\n"
        "  - caption: Homework\n    chapters:\n      - file: exercises/hw1_first/hw1_first\n"
        "      - file: exercises/hw2_second/hw2_second\n"
    )
    write(root / "_toc.yml", toc)
    write(root / "intro.md", "# Intro\n\nThe book.\n")
    write(root / "chapters" / "00_welcome.md", f"{HEADER}# Welcome\n\n```{{course-map}}\n```\n")
    write(root / "chapters" / "01_first.md", "# The first idea\n\nText.\n")
    write(
        root / "chapters" / "02_second.md",
        "# The second idea\n\nAs {doc}`01_first` said, and as [the first chapter](01_first.md) and "
        "{doc}`its homework <../exercises/hw1_first/hw1_first>` show.\n",
    )
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Homework 1\n\nSee {doc}`../../chapters/01_first`.")]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    write(root / "exercises" / "hw1_first" / "hw1_first.ipynb", nbformat.writes(nb))
    nb.cells[0].source = "# Homework 2\n\nSee {doc}`../../chapters/02_second`."
    write(root / "exercises" / "hw2_second" / "hw2_second.ipynb", nbformat.writes(nb))
    entries = [
        {
            "chapter": "01_first",
            "question": "What is the first idea?",
            "homework": "hw1_first",
            "homework_label": "hw one",
        },
        {"chapter": "02_second", "question": "And the second?", "homework": "hw2_second", "homework_label": "hw two"},
    ]
    write(root / "chapters" / "course_map.yml", yaml.safe_dump(entries))
    return root


def jb_build(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(root), "-W", "-n", "--keep-going"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env_for(REPO),
    )


def test_a_small_book_builds_with_and_without_its_first_chapter(tmp_path):
    book = small_book(tmp_path / "book")
    done = jb_build(book)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    welcome = (book / "_build" / "html" / "chapters" / "00_welcome.html").read_text(encoding="utf-8")
    assert "What is the first idea?" in welcome and "And the second?" in welcome
    assert 'href="01_first.html"' in welcome and 'href="../exercises/hw1_first/hw1_first.html"' in welcome
    assert ">Homework 1: hw one<" in welcome and ">Homework 2: hw two<" in welcome
    text = " ".join(re.sub(r"<[^>]+>", " ", welcome).split())
    assert "The first idea (about 5 min)" in text  # two words: the 5-minute minimum
    in_all = re.search(r"In all, ([^.]*)\.", text)
    assert in_all and re.findall(r"\d+", in_all[1]) == ["10", "10"], in_all  # chapters 5 + 5, homework 5 + 5

    shutil.rmtree(book / "_build")
    drop(book / "_toc.yml", "chapters/01_first", "exercises/hw1_first/hw1_first")
    done = jb_build(book)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    html = book / "_build" / "html"
    welcome = (html / "chapters" / "00_welcome.html").read_text(encoding="utf-8")
    assert "What is the first idea?" not in welcome and "And the second?" in welcome
    assert not (html / "chapters" / "01_first.html").exists()
    second = (html / "chapters" / "02_second.html").read_text(encoding="utf-8")
    paragraph = re.search(r"<p>As (.*?)</p>", second, flags=re.S)
    assert paragraph and "<a " not in paragraph[1], paragraph  # each of the three references is plain text now
    words = " ".join(re.sub(r"<[^>]+>", "", paragraph[1]).split())
    assert words.startswith("The first idea said")  # an untitled {doc} reference: the dropped page's title
    assert "the first chapter" in words and "its homework" in words, words
    assert "01_first" not in second and "hw1_first" not in second  # no link left to a dropped page


def test_a_link_to_a_page_that_does_not_exist_still_fails_the_build(tmp_path):
    book = small_book(tmp_path / "book")
    write(book / "chapters" / "02_second.md", "# The second idea\n\nSee {doc}`01_frist`.\n")
    done = jb_build(book)
    assert done.returncode != 0
    assert "01_frist" in done.stdout + done.stderr


def test_the_course_without_chapter_9_and_homework_9_builds_with_warnings_as_errors(tmp_path):
    """The documented step: remove the two lines from _toc.yml; ``./course build``'s
    jupyter-book command then builds the copy cleanly."""
    copy = copy_course(tmp_path / "course")
    drop(copy / "_toc.yml", "chapters/09_a_head_that_learns", "exercises/hw9_attention_backward/hw9_attention_backward")
    cache = REPO / "_build" / ".jupyter_cache"
    if cache.is_dir():  # the chapters' executions, keyed by their code: a warm start, not a shortcut
        shutil.copytree(cache, copy / "_build" / ".jupyter_cache")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=3600,
        env=env_for(copy),
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-3000:]
    html = copy / "_build" / "html"
    assert not (html / "chapters" / "09_a_head_that_learns.html").exists()
    welcome = (html / "chapters" / "00_welcome.html").read_text(encoding="utf-8")
    assert "09_a_head_that_learns" not in welcome and "hw9_attention_backward" not in welcome
    assert "10_attention_in_its_block.html" in welcome
    for page in html.rglob("*.html"):
        content = page.read_text(encoding="utf-8", errors="replace")
        assert not re.search(r'href="[^"]*(09_a_head_that_learns|hw9_attention_backward)\.html', content), page


def test_a_chapter_is_counted_as_it_reads(tmp_path):
    quiz = write(tmp_path / "c.quiz.json", '[{"question": "a"}, {"question": "b"}, {"question": "c"}]')
    write(tmp_path / "c.cards.json", '[{"front": "x", "back": "y"}]')
    prose = " ".join(["word"] * 295) + " and $x_i W_Q$ too"  # 297 words and one formula
    page = write(
        tmp_path / "c.md",
        f"{HEADER}# Title\n\n{prose}\n\n```{{code-cell}} ipython3\nprint(1)\n```\n\n"
        "```{code-cell} ipython3\n:tags: [hide-input]\n\nplot()\n```\n\n"
        f'```{{code-cell}} ipython3\n:tags: [remove-input]\n\nshow_quiz("{quiz.name}")\n```\n\n'
        '```{code-cell} ipython3\n:tags: [remove-input]\n\nshow_cards("c.cards.json")\n```\n',
    )
    # "Title" + 297 words + the formula = 299; two shown cells (one with hidden code); 3 questions; 1 card
    assert study_time.chapter_parts(page) == {"words": 299, "code_cells": 2, "quiz_questions": 3, "flashcards": 1}
    assert study_time.study_files(page) == [quiz, tmp_path / "c.cards.json"]
    # 299 / 150 + 2 + 3 + 0.5 = 7.49 minutes, rounded up to 10
    assert study_time.chapter_minutes(page) == 10


def test_a_homework_is_counted_by_its_statement_and_its_answer_cells(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(" ".join(["word"] * 1500)),
            nbformat.v4.new_code_cell("def f(): ...", metadata={"nbgrader": {"solution": True}}),
            nbformat.v4.new_code_cell("check(f)", metadata={"nbgrader": {"solution": False, "grade": True}}),
            nbformat.v4.new_code_cell("def g(): ...", metadata={"nbgrader": {"solution": True}}),
        ]
    )
    path = write(tmp_path / "hw.ipynb", nbformat.writes(nb))
    assert study_time.homework_parts(path) == {"words": 1500, "answer_cells": 2}
    assert study_time.homework_minutes(path) == 40  # 10 + 2 x 15
    assert homework_title("hw12_kv_cache", "the KV cache") == "Homework 12: the KV cache"
    assert homework_title("extra", "a bonus") == "a bonus"
    assert hours(585) == "10 hours" and hours(410) == "7 hours" and hours(75) == "1.5 hours"
    assert hours(65) == "1 hour" and hours(40) == "40 minutes"


def test_every_chapter_and_homework_of_the_course_gets_a_time():
    rows = map_rows(
        yaml.safe_load((REPO / "chapters" / "course_map.yml").read_text(encoding="utf-8")),
        toc_files(REPO / "_toc.yml"),
    )
    for _, chapter, homework in rows:
        assert 20 <= study_time.chapter_minutes(REPO / f"{chapter}.md") <= 120, chapter
        if homework:
            assert 15 <= study_time.homework_minutes(REPO / f"{homework}.ipynb") <= 120, homework
