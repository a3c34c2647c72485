import { readStringMap } from "../env-map.ts";
import { checkKeys, mapping, str, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";

export const SETUP_ENVIRONMENT = [
  "WORKTREE",
  "RUN_DIR",
  "SURFACE_DIR",
  "REPO",
  "SHA",
  "BRANCH",
  "EVENT_NAME",
  "EVENT_SOURCE",
  "PAYLOAD_JSON",
  "PREVIOUS_SHA",
  "BASE_SHA",
  "BASE_REF",
] as const;

const TEMPLATE = /\{\{[\s\S]*?\}\}/;

export function readEnv(f: ConfigFile, root: YamlMap): Record<string, string> {
  const env = readStringMap(f, root, "env", []) ?? {};
  for (const name of Object.keys(env)) {
    if (name.startsWith("SVC_")) {
      f.report(
        ["env", name],
        "env_reserved",
        `env "${name}" is reserved - names starting SVC_ belong to svc; rename the variable`,
      );
    }
  }
  return env;
}

export function readSetup(f: ConfigFile, root: YamlMap): { run: string }[] {
  if (root.setup == null) return [];
  if (!Array.isArray(root.setup)) {
    f.report(["setup"], "invalid_type", '"setup" must be a list of steps, each { run: <shell command> }');
    return [];
  }
  const steps: { run: string }[] = [];
  root.setup.forEach((item, index) => {
    const path = ["setup", index];
    const step = mapping(f, item, path, " such as { run: <shell command> }");
    if (!step) return;
    checkKeys(f, step, path, ["run"]);
    const run = str(f, step, "run", path, { required: true });
    if (run === undefined) return;
    if (TEMPLATE.test(run)) {
      f.report(
        [...path, "run"],
        "setup_template",
        `"setup[${index}].run" uses a "{{ ... }}" template placeholder, which is rejected - read the environment variables instead: ${SETUP_ENVIRONMENT.map((name) => `$${name}`).join(", ")} (other event fields from $PAYLOAD_JSON)`,
      );
      return;
    }
    steps.push({ run });
  });
  return steps;
}
