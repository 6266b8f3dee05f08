// The search page's ranking and summaries (see search_results.py).
// COURSE_READING_ORDER, the documents in the order of the table of contents,
// is written in front of this file by the extension.

// searchtools.js defines its own Scorer only when none exists: this one keeps
// Sphinx's default weights and changes two things. Equal scores follow the
// reading order (not the titles' alphabetical order), and the glossary's
// entry of a term (anchor #term-...) comes just after the pages that teach it.
var Scorer = {
  score: (result) => {
    const [docname, , anchor, , score] = result;
    const place = COURSE_READING_ORDER.indexOf(docname);
    const glossary = anchor.startsWith("#term-") ? 1 : 0;
    return (score - glossary) * 1000 + (1000 - (place < 0 ? 999 : place));
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};

// TeX as a reader would say it in plain text: commands become symbols or
// disappear, braces go, and nothing that starts with a backslash is left.
const COURSE_TEX_SYMBOLS = {
  top: "ᵀ", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈",
  dots: "…", ldots: "…", cdots: "…", cdot: "·", times: "×", sum: "Σ", prod: "Π",
  infty: "∞", in: "∈", to: "→", rightarrow: "→", mapsto: "↦", partial: "∂", pm: "±",
  lVert: "‖", rVert: "‖", Vert: "‖", lvert: "|", rvert: "|", mid: "|", sqrt: "√",
  alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε",
  theta: "θ", lambda: "λ", mu: "μ", pi: "π", sigma: "σ", tau: "τ", phi: "φ",
  ell: "ℓ", nabla: "∇", Delta: "Δ", Sigma: "Σ", Theta: "Θ",
  log: "log", ln: "ln", exp: "exp", max: "max", min: "min", cos: "cos", sin: "sin",
  lbrace: "{", rbrace: "}", "{": "{", "}": "}", "%": "%", "$": "$", "_": "_", "#": "#",
};

// Replaces each command matched by `command` and its `count` arguments (a
// {group} or a single character) by write(arguments), the innermost last.
function courseWithArguments(tex, command, count, write) {
  const pattern = new RegExp(command.source);
  for (let found = pattern.exec(tex); found; found = pattern.exec(tex)) {
    let end = found.index + found[0].length;
    const args = [];
    for (let k = 0; k < count; k++) {
      while (tex[end] === " ") end++;
      if (tex[end] !== "{") {
        args.push(tex[end] ?? "");
        end++;
        continue;
      }
      let depth = 0;
      let close = end;
      for (; close < tex.length; close++) {
        if (tex[close] === "{") depth++;
        if (tex[close] === "}" && --depth === 0) break;
      }
      args.push(tex.slice(end + 1, close));
      end = close + 1;
    }
    tex = tex.slice(0, found.index) + write(args) + tex.slice(end);
  }
  return tex;
}

function courseTexToText(tex) {
  let text = tex.replace(/^\s*(\\\(|\\\[|\$\$?)|(\\\)|\\\]|\$\$?)\s*$/g, "");
  text = text.replace(/\\begin\{[^}]*\}|\\end\{[^}]*\}/g, " ");
  text = courseWithArguments(text, /\\[dt]?frac\s*/, 2, ([a, b]) => `(${a})/(${b})`);
  text = courseWithArguments(text, /\\sqrt\s*/, 1, ([a]) => (/^\w+$/.test(a) ? `√${a}` : `√(${a})`));
  text = text.replace(/\\(?:operatorname|mathrm|mathbf|mathbb|mathcal|text|textrm|mathit|boldsymbol)\s*\{([^{}]*)\}/g, "$1");
  text = text.replace(/\\(?:left|right|big|Big|bigg|Bigg)\b\s*/g, "");
  text = text.replace(/\\(?:tilde|widetilde|hat|widehat|bar|overline|vec)\b\s*/g, "");
  text = text.replace(/\\\\(\[[^\]]*\])?/g, "; ");
  text = text.replace(/\\(?:qquad|quad|,|;|:|!| )/g, " ");
  text = text.replace(/\\[()[\]]/g, " ");
  text = text.replace(/\\([A-Za-z]+|[{}%$_#])/g, (_, name) => COURSE_TEX_SYMBOLS[name] ?? "");
  text = text.replace(/[{}]/g, "").replace(/&/g, " ");
  return text.replace(/\^ᵀ/g, "ᵀ").replace(/\\/g, " ").replace(/\s+/g, " ").trim();
}

document.addEventListener("DOMContentLoaded", () => {
  if (typeof Search === "undefined") return;
  const pageText = Search.htmlToText;
  // The text of a fetched page as Sphinx takes it, after writing its math out
  // as text and dropping code cells and their outputs (printed numbers,
  // quizzes), so that a summary is the prose around the word.
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    page.querySelectorAll(".cell_input, .cell_output, details.hide > summary, .onlyprint, nav, .bd-sidebar-secondary, .prev-next-area")
      .forEach((el) => el.remove());
    page.querySelectorAll(".math").forEach((el) => {
      el.replaceWith(page.createTextNode(` ${courseTexToText(el.textContent)} `));
    });
    return pageText(page.documentElement.outerHTML, anchor);
  };
});
