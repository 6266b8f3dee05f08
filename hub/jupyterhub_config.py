"""JupyterHub for the course: one machine, learners and instructors with local Unix accounts.

Run as root (it starts each person's Jupyter under their own account):

    jupyterhub -f hub/jupyterhub_config.py

Each person logs in with their Unix password (PAM) and gets JupyterLab,
started from the single-user environment ``SINGLEUSER`` (``hub/singleuser.sh``
installs it: JupyterLab, nbgrader and its extensions, and the learner kit).
nbgrader's exchange and course id come from ``hub/nbgrader_config.py``,
copied to ``/etc/jupyter/nbgrader_config.py``. The proxy,
configurable-http-proxy, comes from npm (``_ext/package.json`` pins it).
The instructors' guide (``solution_book/guide_hub.md``) walks through a term.
"""

from pathlib import Path

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)

#: The single-user environment that hub/singleuser.sh installs.
SINGLEUSER = Path("/opt/sdpa-course/singleuser")
#: The hub's own state: its database and cookie secret (root only, mode 700).
STATE = Path("/srv/jupyterhub")
#: One login name a line: the learners and the instructors who may log in.
ROSTER = Path("/srv/nbgrader/roster.txt")
#: Login names of the instructors (hub admins; they run the formgrader).
INSTRUCTORS = {"instructor"}

# Behind an HTTPS reverse proxy (or give ssl_cert and ssl_key here).
c.JupyterHub.bind_url = "http://:8000"
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")

# Local accounts: PAM checks the password; only the roster and the instructors get in.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = INSTRUCTORS | (set(ROSTER.read_text().split()) if ROSTER.is_file() else set())
c.Authenticator.admin_users = INSTRUCTORS

# Each person's JupyterLab runs under their own Unix account, in their home folder:
# nbgrader's exchange knows who submits from that account.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(SINGLEUSER / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.environment = {"PATH": f"{SINGLEUSER / 'bin'}:/usr/local/bin:/usr/bin:/bin"}
# A first start on a busy machine takes 10 s or more (the extensions load).
c.Spawner.http_timeout = 60
c.Spawner.start_timeout = 120
