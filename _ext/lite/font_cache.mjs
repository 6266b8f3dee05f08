// matplotlib's font cache as Pyodide's own matplotlib makes it, for the in-browser Jupyter.
//
// Run by lite/startup.py:  node _ext/lite/font_cache.mjs <pyodide folder>/ <output folder>
// The Pyodide folder holds the runtime and a pyodide-lock.json with matplotlib
// (the site's copy, so the wheels are the ones the browser loads). Pyodide's
// matplotlib keeps its cache beside font_manager.py, as fontlist.json, with the
// paths of matplotlib's own fonts relative to its data folder; this writes that
// file to <output folder>/fontlist.json.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

import { loadPyodide } from "pyodide";

const [indexURL, output] = process.argv.slice(2);
if (!indexURL || !output) {
  console.error("usage: node font_cache.mjs <pyodide folder>/ <output folder>");
  process.exit(2);
}
// Building the cache logs a warning on stderr: expected here, so not shown.
const pyodide = await loadPyodide({ indexURL, packages: ["matplotlib"], stdout: () => {}, stderr: () => {} });
const path = pyodide.runPython(`
import pathlib
import matplotlib.font_manager as fm
str(pathlib.Path(fm.__file__).parent / "fontlist.json")
`);
writeFileSync(join(output, "fontlist.json"), pyodide.FS.readFile(path));
console.log(`fontlist.json: ${pyodide.runPython("len(fm.fontManager.ttflist)")} fonts`);
