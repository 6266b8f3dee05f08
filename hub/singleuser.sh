#!/bin/sh
# The hub's single-user environment: what every learner's and instructor's JupyterLab
# runs from. JupyterLab, nbgrader with its JupyterLab extensions (assignment list,
# validate, formgrader) and JupyterHub's single-user server, at the course's pinned
# versions, and the learner kit (its pinned requirements, then its wheel: the
# course package sdpa_course), installed with the kit's own two lines.
#
# Run as root in a clone of the course, after ./course kit (which writes the kit
# into _build/html/kit):
#     sh hub/singleuser.sh [ENV]          (default ENV: /opt/sdpa-course/singleuser)
# PYTHON names the interpreter (default python3, 3.11 or newer). Every account must
# be able to run it: a Python installed under /root (pyenv, for one) is not.
set -eu
cd "$(dirname "$0")/.."
ENV=${1:-/opt/sdpa-course/singleuser}
KIT=_build/html/kit
[ -f "$KIT/sdpa-course-requirements.txt" ] || { echo "singleuser.sh: no kit in $KIT: run ./course kit first" >&2; exit 2; }
"${PYTHON:-python3}" -m venv "$ENV"
cd "$KIT"
"$ENV/bin/python" -m pip install --quiet -r sdpa-course-requirements.txt
"$ENV/bin/python" -m pip install --quiet sdpa_course-*-py3-none-any.whl
cd - >/dev/null
"$ENV/bin/python" -m pip install --quiet -c requirements/constraints.txt jupyterhub nbgrader
# Learners have no use for the instructors' tools: off for everyone here, on again
# for an instructor in their own settings (see solution_book/guide_hub.md).
"$ENV/bin/jupyter" labextension disable --level=sys_prefix @jupyter/nbgrader:formgrader
"$ENV/bin/jupyter" labextension disable --level=sys_prefix @jupyter/nbgrader:create-assignment
"$ENV/bin/jupyter" server extension disable --sys-prefix nbgrader.server_extensions.formgrader
chmod -R a+rX "$ENV"
echo "singleuser.sh: the single-user environment is ready in $ENV"
