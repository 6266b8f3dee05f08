"""The in-browser Jupyter: JupyterLite with a Pyodide kernel, built into the site's ``lite/``.

Every chapter and homework page's **Run in the browser** button
(:mod:`lite.links`, a Sphinx extension) opens the page's notebook there.
``python -m lite`` (run by ``./course build`` after the book, with ``_ext`` on
the path) builds it (:mod:`lite.build`): the course stages what is its own
into JupyterLite's folder, and ``jupyter lite build`` does the rest, with its
doit database kept between builds. What is the course's own:

- :mod:`lite.pyodide`: the Pyodide runtime from npm and the official Pyodide
  wheels, each checked against the official ``pyodide-lock.json``;
- :mod:`lite.pins` and :mod:`lite.wheels`: the pinned pure-Python wheels, the
  course's own wheel and the kernel's, listed in the site's lock so that a
  chapter's first cell needs no ``%pip``;
- :mod:`lite.startup`: what Pyodide makes under Node so that the kernel starts
  quickly and quietly (the bytecode of what it imports first, matplotlib's font
  cache);
- :mod:`lite.contents` and :mod:`lite.markdown`: the book's MyST pages made
  into notebooks of plain Markdown (links, citations, boxes, glued values),
  and the homework releases;
- :mod:`lite.settings`: JupyterLite's configuration (the kernel's settings,
  the File menu's Download);
- :mod:`lite.places`: where it reads and writes, and its error.
"""
