"""``python -m sdpa_course.grading new-secret PATH``: make a course secret file (see :mod:`grading.seeds`).

The command lives here, not in ``sdpa_course/grading/seeds.py``: the package imports
``grading.seeds`` itself, so ``python -m sdpa_course.grading.seeds`` would run that module
a second time and Python would warn about it.
"""

import sys

from sdpa_course.grading.seeds import main

raise SystemExit(main(sys.argv[1:]))
