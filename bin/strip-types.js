// Node refuses to strip types from files under node_modules (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING),
// and an installed svc lives there (<prefix>/lib/node_modules/svc). This hook strips the types of svc's
// own .ts files itself, with Node's stripper; everything else loads as usual.
import { readFileSync } from "node:fs";
import { registerHooks, stripTypeScriptTypes } from "node:module";
import { fileURLToPath } from "node:url";

const ROOT = new URL("../", import.meta.url).href;

function ours(url) {
  return url.startsWith(ROOT) && url.endsWith(".ts") && !url.slice(ROOT.length).includes("node_modules/");
}

if (!globalThis.__svcStripTypes) {
  globalThis.__svcStripTypes = true;
  // Node warns once that stripTypeScriptTypes is experimental; it is the same stripper Node uses for
  // .ts files outside node_modules, so the warning would only be noise on every svc command
  const emitWarning = process.emitWarning;
  process.emitWarning = (warning, ...rest) => {
    if (String(warning?.message ?? warning).includes("stripTypeScriptTypes")) return;
    return emitWarning.call(process, warning, ...rest);
  };
  registerHooks({
    load(url, context, nextLoad) {
      if (!ours(url)) return nextLoad(url, context);
      const source = stripTypeScriptTypes(readFileSync(fileURLToPath(url), "utf8"));
      return { format: "module", source, shortCircuit: true };
    },
  });
}
