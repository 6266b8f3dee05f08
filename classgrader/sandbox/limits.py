"""How much one submission's sandbox may use: time, memory, processes, files and output."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Limits:
    wall_seconds: float = 60.0
    memory_bytes: int = 2 * 1024**3
    scratch_bytes: int = 64 * 1024**2
    max_processes: int = 64
    max_file_bytes: int = 32 * 1024**2
    result_bytes: int = 16 * 1024**2  # the JSON event stream
    log_bytes: int = 64 * 1024  # raw fd-level output kept for the record
    cell_output_chars: int = 10_000  # output kept per stream and cell
    cell_share: float = 0.5  # the share of the wall time that the notebook's own cells may use
