#!/usr/bin/env node
// The CLI runs our TypeScript sources directly: Node 24 strips types natively, so there is no build step to forget.
// First import, so it runs before anything else: an older Node stops with one line saying which Node svc needs.
import "./node-floor.js";
import { dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { workerRestartArgv } from "./young-generation.js";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const restart = workerRestartArgv({
  argv: process.argv,
  execArgv: process.execArgv,
  execPath: process.execPath,
  nodeOptions: process.env.NODE_OPTIONS,
});
// process.execve exists on POSIX systems only; elsewhere the worker runs with V8's own sizing
if (restart && typeof process.execve === "function") process.execve(process.execPath, restart, process.env);
// Installed from the npm package, svc sits under node_modules, where Node does not strip types: the hook
// does it. The roles svc starts run this file too; the worker's spawner gets the hook through its execArgv
// (shared/type-stripping.ts). NODE_OPTIONS stays untouched, so agents and setup steps never see the hook.
if (root.split(/[\\/]/).includes("node_modules"))
  await import(pathToFileURL(`${root}/bin/strip-types.js`).href);
const { execute, settings } = await import("@oclif/core");
const { ensureCommandManifest } = await import("../cli/command-manifest.ts");

// Node itself runs the .ts files; oclif must not look for ts-node or compiled output.
settings.enableAutoTranspile = false;
await ensureCommandManifest(root);
await execute({ dir: import.meta.url });
