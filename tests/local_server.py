"""A server process a test starts on 127.0.0.1: a free port, waiting until it answers, stopping it.

The waits end on their condition (the server answers, or its process ends); the limit only stops a
server that never comes up, so it is generous: a busy machine takes longer, it does not fail.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen, log: Path, what: str, seconds: float = 300) -> None:
    """Return once ``url`` answers 200; fail, with the end of ``log``, if ``process`` ends first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what} stopped (exit {process.returncode}):\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what} did not answer at {url} within {seconds:g} s:\n{log.read_text()[-4000:]}")


def stop(process: subprocess.Popen, seconds: float = 30) -> None:
    """Ask ``process`` to stop (SIGTERM, so it can stop what it started), then kill it if it does not."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(seconds)
