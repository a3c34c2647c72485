import { checkKeys, quote, str, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { DaemonSettings } from "../types.ts";
import { entries } from "./read-helpers.ts";

const REPO_NAME = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

export function readRepos(f: ConfigFile, root: YamlMap): DaemonSettings["repos"] {
  const repos: DaemonSettings["repos"] = {};
  for (const [name, raw] of entries(f, root, "repos", [])) {
    const path = ["repos", name];
    if (!REPO_NAME.test(name)) {
      f.report(
        path,
        "invalid_value",
        `repository key ${quote(name)} must be written <owner>/<name>, e.g. acme/widgets`,
      );
      continue;
    }
    checkKeys(f, raw, path, ["clone_url"]);
    const cloneUrl = str(f, raw, "clone_url", path, {
      required: true,
      hint: ", e.g. clone_url: https://github.com/acme/widgets.git",
    });
    if (cloneUrl) repos[name] = { cloneUrl };
  }
  return repos;
}
