// The bytecode of the in-browser Jupyter's wheels, compiled by Pyodide's own CPython.
//
// Run by lite_build.py:  node _ext/wheel_bytecode.mjs <pyodide folder>/ <output folder> <wheel file name>...
// The Pyodide folder holds the runtime and the wheels; the pyc of every module
// of the named wheels is written under the output folder, laid out as in
// site-packages (wheel_bytecode.py says why).
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { loadPyodide } from "pyodide";

const [indexURL, output, ...wheels] = process.argv.slice(2);
if (!indexURL || !output || wheels.length === 0) {
  console.error("usage: node wheel_bytecode.mjs <pyodide folder>/ <output folder> <wheel file name>...");
  process.exit(2);
}
const pyodide = await loadPyodide({ indexURL });
for (const [mount, root] of [["/wheels", indexURL], ["/out", output]]) {
  pyodide.FS.mkdir(mount);
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root }, mount);
}
const code = readFileSync(join(import.meta.dirname, "wheel_bytecode.py"), "utf8");
const module = pyodide.runPython(`
import types
m = types.ModuleType("wheel_bytecode")
exec(compile(${JSON.stringify(code)}, "wheel_bytecode.py", "exec"), m.__dict__)
m`);
let total = 0;
for (const wheel of wheels) {
  total += module.write_bytecode(`/wheels/${wheel}`, "/out");
}
console.log(`${total} modules compiled from ${wheels.length} wheels`);
