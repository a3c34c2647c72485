/**
 * `npm run bench`: runs every `bench/*.bench.ts` in its own process, one after another
 * (the machine has 2 cores; concurrent benchmarks would measure each other).
 * Each benchmark prints its own figures and the ratio against a baseline measured in the same run.
 * `npm run bench -- ingress` runs only the benchmarks whose file name contains "ingress".
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2] ?? "";
const files = readdirSync(here)
  .filter((file) => file.endsWith(".bench.ts") && file.includes(filter))
  .sort();
let failed = 0;
for (const file of files) {
  console.log(`\n== ${file}`);
  const result = spawnSync(process.execPath, [join(here, file)], { stdio: "inherit" });
  if (result.status !== 0) failed += 1;
}
if (files.length === 0) console.log(`no benchmark matches "${filter}"`);
process.exit(failed ? 1 : 0);
