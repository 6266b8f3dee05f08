// The bytecode of the modules the in-browser kernel imports as it starts,
// compiled by Pyodide's own CPython.
//
// Run by lite/startup.py:
//   node _ext/lite/bytecode.mjs <pyodide folder>/ <output folder> <packages> <modules>
// The Pyodide folder holds the runtime, the wheels and the site's lock; the
// packages (comma-separated lock names) are installed, the modules
// (comma-separated) imported, and the pyc of every module then loaded is
// written under the output folder: site/ laid out as in site-packages, stdlib/
// as in the standard library's zip (bytecode_in_pyodide.py says why).
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { loadPyodide } from "pyodide";

const [indexURL, output, packages, modules] = process.argv.slice(2);
if (!indexURL || !output || !packages || !modules) {
  console.error("usage: node bytecode.mjs <pyodide folder>/ <output folder> <packages> <modules>");
  process.exit(2);
}
const pyodide = await loadPyodide({ indexURL });
const failed = [];
await pyodide.loadPackage(packages.split(","), {
  messageCallback: () => {},
  errorCallback: (message) => failed.push(message),
});
if (failed.length > 0) {
  console.error(failed.join("\n"));
  process.exit(1);
}
pyodide.FS.mkdir("/out");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: output }, "/out");
const code = readFileSync(join(import.meta.dirname, "bytecode_in_pyodide.py"), "utf8");
const module = pyodide.runPython(`
import types
m = types.ModuleType("bytecode_in_pyodide")
exec(compile(${JSON.stringify(code)}, "bytecode_in_pyodide.py", "exec"), m.__dict__)
m`);
const sitePackages = pyodide.runPython("import site; site.getsitepackages()[0]");
const total = module.write_bytecode(modules.split(","), sitePackages, "/out");
console.log(`${total} modules compiled, imported by ${modules}`);
