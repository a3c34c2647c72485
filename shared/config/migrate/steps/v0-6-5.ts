import { isScalar, type YAMLMap } from "yaml";
import { deleteKey, has, mapAt, pairOf, plainValue, replaceKey } from "../edit.ts";
import { daemon, type Rewrite, rewrites, type Step } from "./step.ts";
import { type LegacyTarget, namedTarget } from "./targets.ts";

const KEYS = ["runtime", "model", "effort", "credential", "fallbacks"];

/** 0.6.5: `runtime`, `model`, `effort`, `credential`, `fallbacks` replaced by named `targets`. */
export const v0_6_5: Step = {
  release: "0.6.5",
  title:
    'pipeline "runtime" / "model" / "effort" / "credential" / "fallbacks" → a named target in daemon.yaml',
  apply(tree) {
    const d = daemon(tree, this.release);
    for (const p of rewrites(tree, this.release, "pipelines/")) {
      const root = mapAt(p.doc, []);
      const present = root ? KEYS.filter((key) => has(root, key)) : [];
      if (!root || present.length === 0) continue;
      const first = present[0]!;
      if (!d || has(root, "targets")) {
        p.todo(
          root,
          [],
          first,
          `${d ? '"targets" is set as well' : "daemon.yaml is missing or unreadable"} - define a named target in daemon.yaml's "targets:" map, list it in "targets", and delete ${present.map((key) => `"${key}"`).join(", ")}`,
        );
        continue;
      }
      migratePipeline(p, root, d, present);
    }
  },
};

function text(map: YAMLMap, key: string): string | undefined {
  const value = pairOf(map, key)?.value;
  return isScalar(value) && value.value !== null ? String(value.value) : undefined;
}

function migratePipeline(p: Rewrite, root: YAMLMap, d: Rewrite, present: string[]): void {
  const primary: LegacyTarget = {
    ...(text(root, "runtime") ? { runtime: text(root, "runtime") } : {}),
    ...(text(root, "model") ? { model: text(root, "model") } : {}),
    ...(text(root, "credential") ? { credential: text(root, "credential") } : {}),
  };
  const names = [namedTarget(d, primary, p.file)];
  const fallbacks = plainValue(pairOf(root, "fallbacks"));
  for (const fallback of Array.isArray(fallbacks) ? fallbacks : []) {
    // a bare string is a model on the same runtime; a mapping spells runtime, model, credential out
    const legacy: LegacyTarget =
      typeof fallback === "string"
        ? { ...(primary.runtime ? { runtime: primary.runtime } : {}), model: fallback }
        : fallbackTarget(fallback as LegacyTarget, primary);
    names.push(namedTarget(d, legacy, `a fallback of ${p.file}`));
  }
  const effort = text(root, "effort");
  replaceKey(p.doc, root, present[0]!, [["targets", [...new Set(names)]]]);
  for (const key of present.slice(1)) deleteKey(p.doc, root, key);
  const targets = p.doc.get("targets", true) as { flow?: boolean } | undefined;
  if (targets) targets.flow = true;
  p.changed(
    `${present.map((key) => `"${key}"`).join(", ")} became targets: [${[...new Set(names)].join(", ")}]`,
  );
  if (effort !== undefined) {
    p.todo(
      root,
      [],
      "targets",
      `"effort: ${effort}" has no place in a target - pass it in the target's command or model if the agent CLI takes one`,
    );
  }
}

/** A fallback mapping names its own model and credential; only the runtime defaults to the primary's. */
function fallbackTarget(fallback: LegacyTarget, primary: LegacyTarget): LegacyTarget {
  const runtime = fallback.runtime ?? primary.runtime;
  return {
    ...(runtime ? { runtime } : {}),
    ...(fallback.model ? { model: fallback.model } : {}),
    ...(fallback.credential ? { credential: fallback.credential } : {}),
  };
}
