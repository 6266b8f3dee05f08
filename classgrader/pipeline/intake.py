"""Find every student's notebook in a folder or zip of submissions.

Accepted layouts (checked in this order):

1. **nbgrader**: ``<dir>/<student>/<assignment>/<notebook>.ipynb``; ``<dir>``
   may be nbgrader's ``submitted/`` folder or the course folder that holds it.
   A ``timestamp.txt`` next to the notebook is read as the submission time.
2. **A flat folder or a zip, as learning-management systems export them**, one
   notebook per student, the student id in the file name:

   ======================  ====================================================  ==========
   LMS                     file name                                             student id
   ======================  ====================================================  ==========
   Canvas                  ``<name>[_LATE]_<user id>_<submission id>_<file>``    user id
   Moodle                  ``<Full Name>_<id>_assignsubmission_file_<file>``     id
                           (or a folder of that name holding ``<file>``)
   Blackboard              ``<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>``  username
   any                     ``<student>__<anything>.ipynb`` (two underscores)     student
   any                     ``<student>.ipynb``                                   student
   any                     ``<student>/<anything>.ipynb`` (a folder per student) student
   ======================  ====================================================  ==========

Student ids keep letters, digits, ``.``, ``_``, ``-`` and ``@``; other
characters become ``_``. When a student has several notebooks, the one named
like the assignment's notebook wins, then the newest; the others are listed as
ignored. The submission time comes from ``timestamp.txt`` (nbgrader) or the
file name (Blackboard's attempt date; Canvas's ``_LATE`` marker says only
*that* it was late); :mod:`classgrader.after_deadline.late` turns it into a penalty. A
student on the roster (``--roster``, the gradebook's students, or
an nbgrader folder without a notebook) with nothing submitted is *missing*.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import zipfile
from pathlib import Path

MAX_MEMBER_BYTES = 50 * 1024 * 1024
SKIP_PARTS = {"__MACOSX", ".ipynb_checkpoints", ".git"}
#: What nbgrader's submit and collect add to a submission: not the learner's files.
NBGRADER_FILES = {"timestamp.txt", "submission_secret.txt"}

CANVAS = re.compile(r"^(?P<name>[^_]+?)(?:_LATE)?_(?P<id>\d+)_(?P<sub>\d+)_(?P<file>.+)$", re.I)
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_?(?P<file>.*)$", re.I)
BLACKBOARD = re.compile(
    r"^(?P<assign>.+?)_(?P<id>[^_]+)_attempt_(?P<stamp>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})(?:_(?P<file>.+))?$", re.I
)
GENERIC = re.compile(r"^(?P<id>.+?)__(?P<file>.+)$")


@dataclasses.dataclass
class Submission:
    student: str
    path: Path | None  # None: missing
    original_name: str = ""
    layout: str = ""
    display_name: str = ""
    renamed: bool = False
    ignored: list[str] = dataclasses.field(default_factory=list)
    extra_files: dict[str, Path] = dataclasses.field(default_factory=dict)
    timestamp: str | None = None
    timestamp_source: str = ""  # where the timestamp came from, for messages
    lms_late: bool | None = None  # Canvas's verdict without a time: True = marked LATE, False = not; None: no word
    extension: float = 0.0  # seconds: nbgrader's per-student extension (SubmittedAssignment.extension)


class IntakeError(ValueError):
    """The submissions path cannot be read; the message says why."""


def safe_id(raw: str) -> str:
    sid = re.sub(r"[^A-Za-z0-9._@-]+", "_", raw.strip()).strip("._")
    return sid[:100]


def extract_zip(archive: Path, dest: Path) -> Path:
    """Extract the notebooks (and small files) of an LMS zip, refusing unsafe names."""
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise IntakeError(f"{archive} is not a readable zip file: {exc}") from None
    dest.mkdir(parents=True, exist_ok=True)
    with zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            parts = [p for p in Path(info.filename.replace("\\", "/")).parts if p not in ("", ".")]
            if not parts or any(p == ".." or p in SKIP_PARTS for p in parts) or Path(info.filename).is_absolute():
                continue
            if info.file_size > MAX_MEMBER_BYTES:
                continue
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, length=1 << 20)
    return dest


def _is_nbgrader_layout(root: Path, assignment: str) -> bool:
    return any((d / assignment).is_dir() for d in root.iterdir() if d.is_dir())


def discover(root: Path, assignment: str, notebook: str, roster: list[str] | None = None) -> list[Submission]:
    """Every submission under ``root`` (a folder already extracted from any zip)."""
    if not root.is_dir():
        raise IntakeError(f"{root} is not a folder or a zip file")
    if (root / "submitted").is_dir():
        root = root / "submitted"
    if _is_nbgrader_layout(root, assignment):
        subs = _nbgrader(root, assignment, notebook)
    else:
        subs = _flat(root, notebook)
    known = {s.student for s in subs}
    for sid in roster or []:
        sid = safe_id(sid)
        if sid and sid not in known:
            subs.append(Submission(student=sid, path=None, layout="roster"))
            known.add(sid)
    return sorted(subs, key=lambda s: s.student)


def _pick(candidates: list[Path], notebook: str) -> tuple[Path, list[Path]]:
    stem = Path(notebook).stem.lower()

    def rank(p: Path) -> tuple[bool, bool, float, str]:
        name = p.name.lower()
        exact = name == notebook.lower() or name.endswith("_" + notebook.lower())
        close = stem in name
        return (exact, close, p.stat().st_mtime, p.name)

    ordered = sorted(candidates, key=rank, reverse=True)
    return ordered[0], ordered[1:]


def _nbgrader(root: Path, assignment: str, notebook: str) -> list[Submission]:
    subs = []
    for student_dir in sorted(d for d in root.iterdir() if d.is_dir() and d.name not in SKIP_PARTS):
        sid = safe_id(student_dir.name)
        adir = student_dir / assignment
        if not adir.is_dir():
            continue
        files = sorted(p for p in adir.iterdir() if p.is_file() and not p.name.startswith("."))
        notebooks = [p for p in files if p.suffix.lower() == ".ipynb"]
        stamp = adir / "timestamp.txt"
        timestamp = stamp.read_text(errors="replace").strip()[:64] if stamp.is_file() else None
        source = f"{sid}/{assignment}/timestamp.txt"
        if not notebooks:
            others = [p for p in files if p.name not in NBGRADER_FILES]
            if others:  # something was handed in, just not a notebook
                chosen, rest = others[0], others[1:]
                subs.append(
                    Submission(
                        sid,
                        chosen,
                        chosen.name,
                        "nbgrader",
                        renamed=True,
                        ignored=[p.name for p in rest],
                        timestamp=timestamp,
                        timestamp_source=source,
                    )
                )
            else:
                subs.append(Submission(sid, None, "", "nbgrader", timestamp=timestamp, timestamp_source=source))
            continue
        chosen, rest = _pick(notebooks, notebook)
        extras = {
            p.name: p
            for p in files
            if p.suffix.lower() != ".ipynb" and p.name not in NBGRADER_FILES and p.stat().st_size <= 10 * 1024 * 1024
        }
        subs.append(
            Submission(
                sid,
                chosen,
                chosen.name,
                "nbgrader",
                renamed=chosen.name != notebook,
                ignored=[p.name for p in rest],
                extra_files=extras,
                timestamp=timestamp,
                timestamp_source=source,
            )
        )
    return subs


def lms_time(name: str) -> tuple[str | None, bool | None]:
    """(submission time text, marked late) that an LMS file name records.

    Blackboard writes the attempt's date (local time, no zone); Canvas writes
    ``_LATE`` for a submission after its own due date and nothing otherwise
    (so ``False``: Canvas did not find it late); Moodle writes neither (``None``).

    >>> lms_time("Homework 2_jsmith_attempt_2026-03-01-10-20-30_hw2.ipynb")
    ('2026-03-01-10-20-30', None)
    >>> lms_time("doejohn_LATE_222_333_hw2.ipynb"), lms_time("smithjane_101_9001_hw2.ipynb")
    ((None, True), (None, False))
    """
    m = BLACKBOARD.match(name)
    if m:
        return m["stamp"], None
    if MOODLE.match(name):
        return None, None
    m = CANVAS.match(name)
    if m:
        return None, bool(re.match(r"^[^_]+?_LATE_\d+_\d+_", name, re.I))
    return None, None


def parse_name(name: str) -> tuple[str, str, str, str] | None:
    """(student id, display name, original file name, LMS) from an LMS file name."""
    for lms, rx in (("moodle", MOODLE), ("blackboard", BLACKBOARD), ("canvas", CANVAS)):
        m = rx.match(name)
        if m:
            display = m.groupdict().get("name") or ""
            return safe_id(m["id"]), display, (m["file"] or ""), lms
    m = GENERIC.match(name)
    if m:
        return safe_id(m["id"]), "", m["file"], "file"
    return None


def _not_renamed(original: str, notebook: str) -> bool:
    if not original:
        return True
    stem = Path(original).stem
    stem = re.sub(r"-\d+$", "", stem)  # Canvas marks resubmissions as name-1, name-2
    return stem.lower() == Path(notebook).stem.lower() and original.lower().endswith(".ipynb")


def _flat(root: Path, notebook: str) -> list[Submission]:
    found: dict[str, list[tuple[Path, str, str, str]]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or any(p in SKIP_PARTS or p.startswith(".") for p in rel.parts):
            continue
        if len(rel.parts) > 3:
            continue
        parsed = parse_name(path.name)
        if parsed is None and len(rel.parts) >= 2:
            parsed = parse_name(rel.parts[0])  # Moodle's folder per student
            if parsed is not None:
                parsed = (parsed[0], parsed[1], path.name, parsed[3])
            else:
                parsed = (safe_id(rel.parts[0]), "", path.name, "folder")
        if parsed is None:
            if path.suffix.lower() != ".ipynb":
                continue  # LMS receipts and stray files without an id
            parsed = (safe_id(path.stem), "", "", "file")
        sid, display, original, lms = parsed
        if not sid:
            continue
        if lms == "blackboard" and not original:
            continue  # Blackboard's per-attempt .txt receipt
        found.setdefault(sid, []).append((path, display, original, lms))
    subs = []
    for sid, items in sorted(found.items()):
        notebooks = [it for it in items if it[0].suffix.lower() == ".ipynb"]
        pool = notebooks or items
        chosen_path, rest = _pick([it[0] for it in pool], notebook)
        path, display, original, lms = next(it for it in pool if it[0] == chosen_path)
        if lms == "file" or not original:
            # <student>__<anything>.ipynb and <student>.ipynb: the name is the instructor's, not the learner's
            renamed = path.suffix.lower() != ".ipynb"
        else:
            renamed = not _not_renamed(original, notebook)
        named = path.name
        stamp, late = lms_time(named)
        if stamp is None and late is None and path.parent != root:  # Moodle's folder per student
            named = path.parent.name
            stamp, late = lms_time(named)
        subs.append(
            Submission(
                sid,
                path,
                original or path.name,
                lms,
                display_name=display,
                renamed=renamed,
                ignored=[p.name for p in rest],
                timestamp=stamp,
                timestamp_source=f"the file name {named!r}" if stamp else "",
                lms_late=late,
            )
        )
    return subs
