#!/usr/bin/env node
// The CLI runs our TypeScript sources directly: Node 24 strips types natively, so there is no build step to forget.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { execute, settings } from "@oclif/core";
import { ensureCommandManifest } from "../cli/command-manifest.ts";

// Node itself runs the .ts files; oclif must not look for ts-node or compiled output.
settings.enableAutoTranspile = false;
await ensureCommandManifest(dirname(dirname(fileURLToPath(import.meta.url))));
await execute({ dir: import.meta.url });
