import { knownAppSlug, knownGitlabUser } from "../codehost/app-slug.ts";
import { quote, strList, type YamlMap } from "./read.ts";
import type { ConfigFile, KeyPath } from "./source.ts";
import { AUTHOR_ASSOCIATIONS, type AuthorAssociation, type CodehostConfig } from "./types.ts";

/** Who may give comment commands when `codehost.commands_from` is not set. */
export const DEFAULT_COMMANDS_FROM: readonly AuthorAssociation[] = ["owner", "member", "collaborator"];

/**
 * The name comment commands address (`@<name> <word>`): `codehost.bot_name`, else the slug of the
 * App svc acts as, or on GitLab the username of its token's user (both learned by the worker at
 * start-up, shared/codehost/app-slug.ts), else `svc`.
 */
export function botName(config: {
  codehost?: Pick<CodehostConfig, "botName" | "app"> & Partial<Pick<CodehostConfig, "kind" | "apiUrl">>;
}): string {
  const codehost = config.codehost;
  const app = codehost?.app;
  const learned =
    codehost?.kind === "gitlab" && codehost.apiUrl
      ? knownGitlabUser(codehost.apiUrl)
      : app
        ? knownAppSlug(app.id)
        : undefined;
  return codehost?.botName ?? learned ?? "svc";
}

/** A list of author associations (`authors`, `codehost.commands_from`): each one of AUTHOR_ASSOCIATIONS. */
export function readAuthorList(
  f: ConfigFile,
  obj: YamlMap,
  key: string,
  path: KeyPath,
): AuthorAssociation[] | undefined {
  const list = strList(f, obj, key, path);
  if (!list) return undefined;
  const known = new Set<string>(AUTHOR_ASSOCIATIONS);
  let valid = true;
  list.forEach((item, index) => {
    if (known.has(item)) return;
    valid = false;
    f.report(
      [...path, key, index],
      "invalid_value",
      `author ${quote(item)} is not an author association - use ${AUTHOR_ASSOCIATIONS.join(", ")}`,
    );
  });
  return valid ? (list as AuthorAssociation[]) : undefined;
}
