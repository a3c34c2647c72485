#!/usr/bin/env node
// The CLI runs our TypeScript sources directly: Node 24 strips types natively, so there is no build step to forget.
import { dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
// Installed from the npm package, svc sits under node_modules, where Node does not strip types: the hook
// does it, in this process and (through NODE_OPTIONS) in the processes svc starts (ingress, worker, spawner).
if (root.split(/[\\/]/).includes("node_modules")) {
  const hook = pathToFileURL(`${root}/bin/strip-types.js`).href;
  await import(hook);
  const option = `--import=${hook}`;
  if (!(process.env.NODE_OPTIONS ?? "").includes(option))
    process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} ${option}`.trim();
}
const { execute, settings } = await import("@oclif/core");
const { ensureCommandManifest } = await import("../cli/command-manifest.ts");

// Node itself runs the .ts files; oclif must not look for ts-node or compiled output.
settings.enableAutoTranspile = false;
await ensureCommandManifest(root);
await execute({ dir: import.meta.url });
