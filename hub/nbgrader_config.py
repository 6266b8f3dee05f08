"""nbgrader's settings for everyone on the hub: copy to /etc/jupyter/nbgrader_config.py.

The learners' assignment list and the instructors' formgrader and commands
read it: one course, one exchange folder that every account can write into
(mode 777; nbgrader keeps learners from reading each other's submissions).
The instructor's course folder has the repository's own ``nbgrader_config.py``
too (where the sources and releases live, and the course secret's place).
"""

c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "sdpa-course"  # the course id of the repository's nbgrader_config.py
c.Exchange.root = "/srv/nbgrader/exchange"
