"""MyST markdown made into the plain Markdown that JupyterLab renders.

The book's pages are written in MyST: roles such as ``{doc}`...``` or
``{cite:p}`...``` and directives such as ``:::{admonition}`` fences. Sphinx
turns them into links, citations and boxes on the site; JupyterLab (and so the
in-browser Jupyter) shows them as raw text. :func:`to_markdown` rewrites a
markdown cell's source for JupyterLab:

- ``{doc}``, ``{ref}``, ``{numref}``, ``{term}`` and ``{eq}`` become links to the
  same page's notebook in the in-browser Jupyter, which holds every page of the
  book. (A relative link to the published ``.html`` page would not do: JupyterLab
  takes every relative link for a file of its own drive and opens it there.)
  The link text is what the site shows: the page or section title, the figure's
  number ("Fig. 4"), the term.
- ``{cite:p}`` and ``{cite:t}`` become author-year text, "(Vaswani et al., 2017)"
  and "Vaswani et al. (2017)", from ``references.bib`` read by pybtex.
- Admonitions become a block quote with their title in bold; dropdowns a
  ``<details>`` block, closed as on the site; any other directive its body, and a
  directive with no Markdown body (``{literalinclude}``, custom ones) a line
  saying what the book's page shows there.
- ``{glue:text}`name:format``` (and ``{glue}``, ``{glue:md}``) become the value
  the page's code glued, formatted as the book formats it (myst-nb's own
  ``format_plain_text``), read from what myst-nb stored when it executed the
  page (``_build/jupyter_execute/<page>.glue.json``).
- A Markdown link to a page of the book by its source file
  (``[Chapter 4](../../chapters/04_scaled_dot_product_attention.md)``, as the
  homework notebooks write them) leads to that page's notebook.
- Any other role becomes its text; target lines ``(label)=``, comments ``% ...``
  and equation labels after ``$$`` go.

What the links point at comes from the built site: its Sphinx inventory
(``objects.inv``: pages, labels, terms) and, for figure numbers, the figure's
caption on its page. Links are made between the notebooks' places in the
in-browser Jupyter (:func:`notebook_path`): the homework sits at the top of its
drive, so that a notebook downloaded from it keeps its own file name.
"""

from __future__ import annotations

import codecs
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# A role: {name}`content`; the content may not hold a backtick.
ROLE = re.compile(r"\{(?P<name>[a-zA-Z][\w:+-]*)\}`(?P<content>[^`]*)`")
# The opening fence of a directive: ```{name} argument, or :::{name} argument.
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:+-]+)\}\s*(?P<argument>.*)$")
OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*)$")
TARGET = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
COMMENT = re.compile(r"^\s*%")
EQUATION_LABEL = re.compile(r"^(\s*\$\$)\s*\([^()\s]+\)\s*$")
EXPLICIT = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
# A Markdown link to a relative .md or .ipynb file: [text](path.md#anchor).
PAGE_LINK = re.compile(
    r"\[(?P<text>[^\]]*)\]\((?P<target>(?![a-z][\w+.-]*:|/|#)[^)\s]+?\.(?:md|ipynb))(?P<anchor>#[^)\s]*)?\)"
)
# What :meth:`Converter.roles` replaces: a role, a link to a page's file, or an
# inline code span (left as it is).
INLINE = re.compile(f"{ROLE.pattern}|{PAGE_LINK.pattern}|(?P<code>``[^`]+``|`[^`]+`)")
GLUE_ROLES = {"glue", "glue:", "glue:any", "glue:text", "glue:md"}
ADMONITIONS = {
    "admonition",
    "attention",
    "caution",
    "danger",
    "error",
    "hint",
    "important",
    "note",
    "seealso",
    "tip",
    "warning",
    "margin",
    "sidebar",
    "topic",
    "epigraph",
}


class MystConversionError(ValueError):
    """A role or directive names something the book does not have."""


@dataclass(frozen=True)
class Citation:
    authors: str  # "Vaswani et al."
    year: str


@dataclass
class Targets:
    """What roles may point at, as found in the built site.

    ``docs``: page name ("chapters/01_self_attention") -> title; ``labels``:
    label -> (page name, anchor, text); ``terms``: term (lower case) -> page name;
    ``numbers``: label -> number text ("Fig. 4"); ``citations``: bibtex key ->
    :class:`Citation`; ``glue``: page name -> {name: the glued output's data
    (mime type -> text)}.
    """

    docs: dict[str, str] = field(default_factory=dict)
    labels: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    terms: dict[str, str] = field(default_factory=dict)
    numbers: dict[str, str] = field(default_factory=dict)
    citations: dict[str, Citation] = field(default_factory=dict)
    glue: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)


def notebook_path(docname: str) -> str:
    """Where a page's notebook sits in the in-browser Jupyter's drive.

    A homework release (``exercises/hw4_x/hw4_x``) sits at the top: JupyterLite's
    *Download* names the file after its whole path, so there it is the file's
    own name (``hw4_x.ipynb``), the one the learner hands in. Every other page
    keeps the book's layout (``chapters/01_self_attention.ipynb``).
    """
    parts = docname.split("/")
    if len(parts) == 3 and parts[0] == "exercises" and parts[1] == parts[2]:
        return f"{parts[2]}.ipynb"
    return f"{docname}.ipynb"


def read_glue(executed: Path) -> dict[str, dict[str, dict[str, str]]]:
    """page name -> {glued name: its output's data}, from the ``<page>.glue.json``
    files myst-nb writes beside the executed notebooks (``executed``)."""
    import json

    glued = {}
    for path in sorted(executed.rglob("*.glue.json")):
        docname = path.relative_to(executed).as_posix().removesuffix(".glue.json")
        outputs = json.loads(path.read_text(encoding="utf-8"))
        glued[docname] = {name: dict(output.get("data", {})) for name, output in outputs.items()}
    return glued


def read_targets(site: Path, bibfiles: Iterable[Path], executed: Path | None = None) -> Targets:
    """The targets of the built site at ``site``, the citations of ``bibfiles`` and
    the glued values of the executed pages (``executed``, by default
    ``jupyter_execute`` beside the site, where jupyter-book puts them)."""
    from sphinx.util.inventory import InventoryFile

    with (site / "objects.inv").open("rb") as f:
        inventory = InventoryFile.load(f, "", posixpath.join)
    targets = Targets()
    for name, (_, _, _, title) in inventory.get("std:doc", {}).items():
        targets.docs[name] = title
    numbered: dict[str, dict[str, str]] = {}  # page -> {anchor: number}
    for label, (_, _, uri, text) in inventory.get("std:label", {}).items():
        page, _, anchor = uri.partition("#")
        targets.labels[label] = (page.removesuffix(".html"), anchor, text)
        if page not in numbered:
            numbered[page] = caption_numbers(_read(site / page))
        if anchor in numbered[page]:
            targets.numbers[label] = numbered[page][anchor]
    for term, (_, _, uri, _) in inventory.get("std:term", {}).items():
        targets.terms[term.lower()] = uri.partition("#")[0].removesuffix(".html")
    for bib in bibfiles:
        targets.citations.update(read_citations(bib))
    targets.glue = read_glue(executed or site.parent / "jupyter_execute")
    return targets


# A figure or table with an id, and the number its caption shows ("Fig. 4").
NUMBERED = re.compile(
    r'<(?P<tag>figure|table)\b[^>]*\bid="(?P<id>[^"]+)"[^>]*>'
    r'(?:(?!</(?P=tag)>).)*?class="caption-number">(?P<number>[^<]+)<',
    re.DOTALL,
)


def caption_numbers(html: str) -> dict[str, str]:
    """id -> caption number of the figures and tables of a built page."""
    return {m.group("id"): m.group("number").strip() for m in NUMBERED.finditer(html)}


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def read_citations(bib: Path) -> dict[str, Citation]:
    """bibtex key -> author-year citation, as sphinxcontrib-bibtex's author_year style writes it."""
    from pybtex.database import parse_file

    citations = {}
    for key, entry in parse_file(str(bib), bib_format="bibtex").entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [" ".join(p.prelast_names + p.last_names) or str(p) for p in people]
        names = [_plain(n) for n in names]
        if not names:
            authors = _plain(entry.fields.get("organization", entry.fields.get("title", key)))
        elif len(names) == 1:
            authors = names[0]
        elif len(names) == 2:
            authors = f"{names[0]} and {names[1]}"
        else:
            authors = f"{names[0]} et al."
        citations[key] = Citation(authors, entry.fields.get("year", "n.d."))
    return citations


def _plain(text: str) -> str:
    """A bibtex field as text: LaTeX accents decoded (latexcodec, pybtex's own), braces gone."""
    import latexcodec  # noqa: F401  (registers the codec)

    decoded: str = codecs.decode(text, "ulatex")  # type: ignore[call-overload]  # latexcodec decodes str to str
    return decoded.replace("{", "").replace("}", "")


class Converter:
    """Converts the markdown of one page (``docname``, e.g. "chapters/01_self_attention")."""

    def __init__(self, targets: Targets, docname: str) -> None:
        self.targets = targets
        self.docname = docname

    # ------------------------------------------------------------------ roles

    def link(self, text: str, docname: str, anchor: str = "") -> str:
        """A Markdown link from this page's notebook to ``docname``'s notebook."""
        here = posixpath.dirname(notebook_path(self.docname))
        url = posixpath.relpath(notebook_path(docname), here or ".")
        if anchor:
            url += f"#{anchor}"
        return f"[{text}]({url})"

    def resolve_doc(self, target: str) -> str:
        """A {doc} target (relative to this page, or from the root with a leading /) as a page name."""
        if target.startswith("/"):
            name = posixpath.normpath(target.lstrip("/"))
        else:
            name = posixpath.normpath(posixpath.join(posixpath.dirname(self.docname), target))
        name = name.removesuffix(".md").removesuffix(".ipynb")
        if name not in self.targets.docs:
            raise MystConversionError(f"{self.docname}: {{doc}}`{target}` names no page of the book")
        return name

    def role(self, name: str, content: str) -> str:
        explicit = EXPLICIT.match(content)
        title, target = (explicit.group("title"), explicit.group("target")) if explicit else (None, content)
        if name == "doc":
            docname = self.resolve_doc(target)
            return self.link(title or self.targets.docs[docname], docname)
        if name in ("ref", "numref", "eq"):
            if target not in self.targets.labels:
                raise MystConversionError(f"{self.docname}: {{{name}}}`{content}` names no label of the book")
            docname, anchor, text = self.targets.labels[target]
            number = self.targets.numbers.get(target, "")
            if name == "numref" and number:
                text = (title or "%s").replace("%s", number.split()[-1]) if title else number
            elif name == "eq":
                text = title or "the equation"
            else:
                text = title or text
            return self.link(text, docname, anchor)
        if name == "term":
            term = title or target
            page = self.targets.terms.get(target.lower())
            if page is None:
                raise MystConversionError(f"{self.docname}: {{term}}`{content}` is in no glossary of the book")
            return self.link(term, page)
        if name.startswith("cite"):
            return self.cite(name, content)
        if name in GLUE_ROLES:
            return self.glued(name, content)
        if name == "math":
            return f"${content}$"
        return title or target

    def cite(self, name: str, content: str) -> str:
        found = []
        for key in (k.strip() for k in content.split(",")):
            if key not in self.targets.citations:
                raise MystConversionError(f"{self.docname}: {{{name}}}`{content}`: {key!r} is not in references.bib")
            found.append(self.targets.citations[key])
        if name in ("cite:t", "cite:ts", "cite:ct"):
            return "; ".join(f"{c.authors} ({c.year})" for c in found)
        return "(" + "; ".join(f"{c.authors}, {c.year}" for c in found) + ")"

    def glued(self, name: str, content: str) -> str:
        """A glue role: the value this page's code glued, as myst-nb writes it on the page."""
        from myst_nb.core.variables import format_plain_text

        key, fmt = content.rsplit(":", 1) if name == "glue:text" and ":" in content else (content, "")
        outputs = self.targets.glue.get(self.docname, {})
        if key not in outputs:
            raise MystConversionError(
                f"{self.docname}: {{{name}}}`{content}`: the page's executed notebook glued no {key!r} "
                f"(glued: {sorted(outputs) or 'nothing'})"
            )
        data = outputs[key]
        if name == "glue:md" and "text/markdown" in data:
            return data["text/markdown"]
        if "text/plain" not in data:
            raise MystConversionError(f"{self.docname}: {{{name}}}`{content}`: {key!r} has no text to paste")
        return format_plain_text(data["text/plain"], fmt) if name == "glue:text" else data["text/plain"]

    def page_link(self, match: re.Match[str]) -> str:
        """A Markdown link to a page's source file, made a link to that page's notebook."""
        target = match.group("target")
        docname = posixpath.normpath(posixpath.join(posixpath.dirname(self.docname), target))
        docname = docname.removesuffix(".md").removesuffix(".ipynb")
        if docname not in self.targets.docs:
            raise MystConversionError(f"{self.docname}: the link to {target} leads to no page of the book")
        return self.link(match.group("text"), docname, (match.group("anchor") or "").lstrip("#"))

    def roles(self, line: str) -> str:
        """The line with every role and link to a page's file replaced (inline code spans are left alone)."""

        def one(m: re.Match[str]) -> str:
            if m.group("name") is not None:
                return self.role(m.group("name"), m.group("content"))
            if m.group("target") is not None:
                return self.page_link(m)
            return m.group(0)

        return INLINE.sub(one, line)

    # ------------------------------------------------------------- directives

    def convert(self, source: str) -> str:
        """A markdown cell's source, converted."""
        return "\n".join(self.block(source.split("\n"))).strip("\n")

    def block(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        fence_code: str | None = None  # inside a plain ``` code block: copy as is
        while i < len(lines):
            line = lines[i]
            if fence_code is not None:
                out.append(line)
                if line.strip().startswith(fence_code) and set(line.strip()) == {fence_code[0]}:
                    fence_code = None
                i += 1
                continue
            opening = FENCE.match(line)
            if opening:
                end = closing_line(lines, i, opening.group("fence"))
                out.extend(self.directive(opening.group("name"), opening.group("argument"), lines[i + 1 : end]))
                i = end + 1
                continue
            plain = re.match(r"^\s*(`{3,}|~{3,})", line)
            if plain:
                fence_code = plain.group(1)
                out.append(line)
            elif TARGET.match(line) or COMMENT.match(line):
                pass
            else:
                out.append(self.roles(EQUATION_LABEL.sub(r"\1", line)))
            i += 1
        return out

    def directive(self, name: str, argument: str, body: list[str]) -> list[str]:
        options: dict[str, str] = {}
        while body and OPTION.match(body[0]):
            m = OPTION.match(body[0])
            assert m is not None
            options[m.group("key")] = m.group("value")
            body = body[1:]
        if body and body[0].strip() == "---":  # options as a YAML block
            end = body.index("---", 1) if "---" in body[1:] else 0
            body = body[end + 1 :]
        inner = self.block(body)
        if name in ADMONITIONS:
            title = self.roles(argument.strip()) or name.capitalize()
            quoted = [f"> {line}" if line.strip() else ">" for line in inner]
            return ["", f"> **{title}**", ">", *quoted, ""]
        if name in ("dropdown", "toggle"):
            title = self.roles(argument.strip()) or "Show"
            return ["", f"<details><summary>{title}</summary>", "", *inner, "", "</details>", ""]
        if name in ("math",):
            return ["", "$$", *body, "$$", ""]
        if name in ("code", "code-block", "sourcecode"):
            return ["", f"```{argument.strip()}", *body, "```", ""]
        if name == "figure" or name == "image":
            alt = options.get("alt", "")
            caption = " ".join(line.strip() for line in inner if line.strip())
            shown = f"*Figure: {caption or alt}*" if (caption or alt) else ""
            return ["", f"{shown} (shown on the book's page)".strip(), ""]
        if any(line.strip() for line in inner):
            return ["", *inner, ""]
        page = self.targets.docs.get(self.docname, "the book's page")
        return ["", f"*This part ({name}) is shown on the book's page, {page}.*", ""]


def closing_line(lines: list[str], start: int, fence: str) -> int:
    """The index of the line closing the directive opened at ``start`` (nested ones counted)."""
    char, depth = fence[0], 1
    for j in range(start + 1, len(lines)):
        stripped = lines[j].strip()
        inner = FENCE.match(lines[j])
        if inner and inner.group("fence")[0] == char:
            depth += 1
        elif stripped and set(stripped) == {char} and len(stripped) >= len(fence if depth == 1 else char * 3):
            depth -= 1
            if depth == 0:
                return j
    raise MystConversionError(f"the directive opened by {lines[start].strip()!r} is never closed")


def to_markdown(source: str, targets: Targets, docname: str) -> str:
    """One markdown cell of page ``docname``, in the Markdown JupyterLab renders."""
    return Converter(targets, docname).convert(source)
