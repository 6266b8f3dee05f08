"""``./course serve`` serves the built site on 127.0.0.1; ``./course publish`` copies it, and only it."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

import pytest
from built_book import HTML, ROOT, built_page


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_prints_its_address_and_serves_the_site():
    built_page("index.html")
    port = _free_port()
    with subprocess.Popen(
        [str(ROOT / "course"), "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        _serve_and_fetch(proc, port)


def _serve_and_fetch(proc: subprocess.Popen, port: int) -> None:
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in first, first
        body = b""
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=5) as response:
                    body = response.read()
                break
            except OSError:
                time.sleep(0.1)
        assert body == (HTML / "index.html").read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("port", ["abc", "0", "70000"])
def test_serve_refuses_a_bad_port(port):
    done = subprocess.run([str(ROOT / "course"), "serve", "--port", port], capture_output=True, text=True)
    assert done.returncode == 2
    assert "--port" in done.stderr and f"'{port}'" in done.stderr, done.stderr


def test_publish_copies_the_site_and_refuses_a_folder_that_is_not_empty(tmp_path):
    built_page("index.html")
    if not (HTML / "kit").is_dir():
        pytest.fail("_build/html/kit does not exist: run ./course build")
    dest = tmp_path / "public"
    done = subprocess.run([str(ROOT / "course"), "publish", str(dest)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    assert copied == sorted(str(p.relative_to(HTML)) for p in HTML.rglob("*"))
    assert not (dest / "solutions").exists() and "solutions" not in {p.split("/")[0] for p in copied}
    again = subprocess.run([str(ROOT / "course"), "publish", str(dest)], capture_output=True, text=True)
    assert again.returncode == 2 and "exists and is not empty" in again.stderr


def test_publish_warns_when_a_source_is_newer_than_the_build(tmp_path):
    """The command alone, on a stand-in site: a chapter changed after the build is named in a warning."""
    import os
    import shutil

    course = tmp_path / "course"
    (course / "_build" / "html" / "kit").mkdir(parents=True)
    (course / "chapters").mkdir()
    shutil.copy(ROOT / "course", course / "course")
    (course / "chapters" / "one.md").write_text("# One\n")
    (course / "_build" / "html" / "index.html").write_text("<html></html>\n")
    (course / "_build" / "html" / "kit" / ".kit-inputs").write_text("x\n")
    os.utime(course / "chapters" / "one.md", (1, 1))  # older than the build
    fresh = subprocess.run([str(course / "course"), "publish", str(tmp_path / "a")], capture_output=True, text=True)
    assert fresh.returncode == 0 and "WARNING" not in fresh.stderr, fresh.stderr
    build = (course / "_build" / "html" / "index.html").stat().st_mtime
    os.utime(course / "chapters" / "one.md", (build + 60, build + 60))  # edited after the build
    stale = subprocess.run([str(course / "course"), "publish", str(tmp_path / "b")], capture_output=True, text=True)
    assert stale.returncode == 0 and "chapters/one.md" in stale.stderr, stale.stderr
