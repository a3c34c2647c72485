import { checkKeys, isMapping, mapping, oneOf, quote, str, strList, type YamlMap } from "./read.ts";
import { REMOVED_VALUES, reportRemovedKeys } from "./removed-keys.ts";
import { isSemVer } from "./semver.ts";
import { type ConfigFile, formatPath, parseYaml, splitFrontmatter } from "./source.ts";
import type { Agent, Member, Policy, Skill } from "./types.ts";

/** Parses the frontmatter of a Markdown file; reports a missing or broken block. */
export function readFrontmatter(
  f: ConfigFile,
  text: string,
  shape: string,
): { meta: YamlMap; body: string } | undefined {
  const split = splitFrontmatter(text);
  if (!split) {
    f.report(
      [],
      "frontmatter_missing",
      `has no frontmatter - start the file with a "---" block holding ${shape}, closed by "---"`,
    );
    return undefined;
  }
  const parsed = parseYaml(f, split.yaml, 1);
  if (!parsed) return undefined;
  const meta = mapping(f, parsed.data ?? {}, [], ` - the frontmatter must hold ${shape}`);
  return meta ? { meta, body: split.body } : undefined;
}

function checkFrontmatterName(f: ConfigFile, meta: YamlMap, expected: string, what: string): void {
  const name = str(f, meta, "name", []);
  if (name && name !== expected) {
    f.report(
      ["name"],
      "name_mismatch",
      `frontmatter name ${quote(name)} differs from the ${what} name "${expected}" - make them equal`,
    );
  }
}

export function readPolicy(f: ConfigFile, name: string, text: string): Policy | undefined {
  const doc = readFrontmatter(f, text, "name and description");
  if (!doc) return undefined;
  checkKeys(f, doc.meta, [], ["name", "description"]);
  const named = str(f, doc.meta, "name", [], {
    required: true,
    hint: ` - add "name: ${name}" to the frontmatter`,
  });
  if (named && named !== name) {
    f.report(
      ["name"],
      "name_mismatch",
      `frontmatter name ${quote(named)} differs from the file name "${name}.md" - make them equal`,
    );
  }
  const description = str(f, doc.meta, "description", [], {
    required: true,
    hint: " - say in one line what the policy asks",
  });
  if (!named || named !== name || !description) return undefined;
  return { name, description, body: doc.body, file: f.file };
}

export function readAgent(f: ConfigFile, name: string, text: string): Agent | undefined {
  const doc = readFrontmatter(f, text, "description and policies");
  if (!doc) return undefined;
  reportRemovedKeys(f, doc.meta);
  checkKeys(f, doc.meta, [], ["name", "description", "policies"]);
  checkFrontmatterName(f, doc.meta, name, "agent directory");
  const description = str(f, doc.meta, "description", []) ?? "";
  const policies = strList(f, doc.meta, "policies", []) ?? [];
  return { name, description, policies, persona: doc.body, file: f.file };
}

export function readSkill(f: ConfigFile, name: string, text: string): Skill | undefined {
  const doc = readFrontmatter(f, text, "description and metadata.version");
  if (!doc) return undefined;
  reportRemovedKeys(f, doc.meta);
  checkKeys(f, doc.meta, [], ["name", "description", "metadata", "policies", "principal"]);
  checkFrontmatterName(f, doc.meta, name, "skill directory");
  const description = str(f, doc.meta, "description", []) ?? "";
  const policies = strList(f, doc.meta, "policies", []) ?? [];
  const principal = str(f, doc.meta, "principal", []);
  const hint = ' - add "metadata: { version: 1.0.0 }" to the frontmatter';
  const metadata = doc.meta.metadata;
  let version: string | undefined;
  if (metadata === undefined || metadata === null) {
    f.report(["metadata", "version"], "required", `"metadata.version" is required${hint}`);
  } else if (isMapping(metadata)) {
    const raw = metadata.version;
    if (raw === undefined || raw === null)
      f.report(["metadata", "version"], "required", `"metadata.version" is required${hint}`);
    else if (typeof raw !== "string" || !isSemVer(raw))
      f.report(
        ["metadata", "version"],
        "version_invalid",
        `"metadata.version" must be a SemVer version such as 1.4.1 (got ${quote(raw)}); quote it if YAML reads it as a number`,
      );
    else version = raw;
  } else {
    f.report(["metadata"], "invalid_type", `"metadata" must be a mapping${hint}`);
  }
  if (!version) return undefined;
  return {
    name,
    description,
    version,
    policies,
    ...(principal ? { principal } : {}),
    body: doc.body,
    file: f.file,
  };
}

export function readMembers(f: ConfigFile, data: unknown): Member[] {
  if (data === null || data === undefined) return [];
  const root = mapping(f, data, [], ' - write "members:" followed by a list');
  if (!root) return [];
  checkKeys(f, root, [], ["members"]);
  const list = root.members;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) {
    f.report(["members"], "invalid_type", '"members" must be a list of { name, kind, identities }');
    return [];
  }
  const members: Member[] = [];
  const seen = new Set<string>();
  list.forEach((item, index) => {
    const path = ["members", index];
    const raw = mapping(f, item, path);
    if (!raw) return;
    checkKeys(f, raw, path, ["name", "kind", "identities"]);
    const name = str(f, raw, "name", path, { required: true });
    let kind: Member["kind"] | undefined;
    if (raw.kind === "bot")
      f.report([...path, "kind"], "removed_key", REMOVED_VALUES.memberKindBot(formatPath(path)));
    else kind = oneOf(f, raw, "kind", path, ["agent", "human"] as const, { required: true });
    if (name && seen.has(name))
      f.report(
        [...path, "name"],
        "duplicate_name",
        `member name ${quote(name)} appears twice - give each member its own name`,
      );
    if (name) seen.add(name);
    const identities: Member["identities"] = {};
    const ids =
      raw.identities === undefined || raw.identities === null
        ? {}
        : mapping(f, raw.identities, [...path, "identities"]);
    if (ids) {
      const idPath = [...path, "identities"];
      checkKeys(f, ids, idPath, ["codehost", "chat"]);
      if (ids.codehost !== undefined) {
        const codehost = mapping(f, ids.codehost, [...idPath, "codehost"], " such as { handle: octocat }");
        const handle = codehost && str(f, codehost, "handle", [...idPath, "codehost"], { required: true });
        if (handle) identities.codehost = { handle };
      }
      if (ids.chat !== undefined) {
        const chat = mapping(f, ids.chat, [...idPath, "chat"], " such as { id: U0123 }");
        const id = chat && str(f, chat, "id", [...idPath, "chat"], { required: true });
        if (id) identities.chat = { id };
      }
    }
    if (name && kind) members.push({ name, kind, identities });
  });
  return members;
}
