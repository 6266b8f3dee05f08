"""The sandbox imports the grader's modules from bytecode the grader compiled (classgrader/sandbox/bytecode.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_class_grading import LIMITS, SANDBOX_MODES, needs_sandbox

from classgrader import sandbox
from classgrader.sandbox import bytecode
from classgrader.stages.sandbox_run import package_files
from sdpa_course import grading

# Counts every module the learner's interpreter compiles from source while importing grading.
PROBE = "\n".join(
    [
        "import importlib._bootstrap_external as ext, json, sys",
        "compiled = []",
        "original = ext.SourceLoader.source_to_code",
        "def counting(self, data, path, **kw):",
        "    compiled.append(path)",
        "    return original(self, data, path, **kw)",
        "ext.SourceLoader.source_to_code = counting",
        "from sdpa_course import grading",
        "ext.SourceLoader.source_to_code = original",
        "files = [getattr(m, '__file__', None) or '' for m in list(sys.modules.values())]",
        "names = sorted(f for f in files if f.startswith('/grader/sdpa_course/grading'))",
        "print(json.dumps({'compiled': compiled, 'grading': names}))",
    ]
)


@needs_sandbox
@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_grading_is_imported_from_the_graders_bytecode_in_the_sandbox(mode):
    files = package_files("sdpa_course/grading", Path(grading.__file__).parent)
    job = {"cells": [{"n": 0, "source": PROBE, "role": "extra", "grade_id": None}], "checks": []}
    outcome = sandbox.run(job, files, LIMITS, uid=61125, mode=mode)
    cell = next(e for e in outcome.events if e.get("event") == "cell")
    facts = json.loads(cell["stdout"].splitlines()[-1])
    assert len(facts["grading"]) >= 3, facts  # grading and the modules it imports did load
    assert [p for p in facts["compiled"] if p.startswith("/grader/")] == [], facts


def test_a_changed_source_is_compiled_again(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("VALUE = 1\n")
    first = bytecode.compiled(module, "/grader/m.py")
    assert first is not None and bytecode.compiled(module, "/grader/m.py") == first
    module.write_text("VALUE = 22\n")
    os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns + 10**9))
    second = bytecode.compiled(module, "/grader/m.py")
    assert second is not None and second != first and second.read_bytes() != first.read_bytes()
    assert oct(second.stat().st_mode & 0o777) == "0o644"
