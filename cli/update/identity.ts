import type { Installation } from "./installation.ts";
import type { ReleaseManifest } from "./npm.ts";

/**
 * Whether a release on the registry is this project's, from its own manifest: its name is ours and
 * it carries our marker (`"svc": { "project": ... }` in package.json). A registry can serve anything
 * under a name (the public `svc` is an unrelated SVG converter; a mirror or a misconfigured
 * `npm_config_registry` may serve a stranger's package under ours), and `npm install --global`
 * would run that package's code as the operator, so a release that fails either test is refused
 * before npm installs anything. Returns the refusal, or undefined for our own release.
 */
export function foreignRelease(
  found: ReleaseManifest,
  self: Pick<Installation, "name" | "project">,
  registry: string,
): string | undefined {
  const marker = isObject(found.svc) ? found.svc.project : undefined;
  if (found.name === self.name && self.project !== undefined && marker === self.project) return undefined;
  const which = `${shown(found.name)}@${shown(found.version)}`;
  const description =
    typeof found.description === "string" && found.description.trim()
      ? `"${shown(found.description)}"`
      : "no description";
  const why =
    found.name !== self.name
      ? `its name is not ${self.name}`
      : self.project === undefined
        ? `this svc's own package.json has no "svc.project" marker to compare it with`
        : `its package.json lacks "svc": { "project": "${self.project}" }, which every svc release carries`;
  return (
    `refusing to install ${which} (${description}) from ${registry}: it is not svc - ${why}. ` +
    "Check the registry npm uses (`npm config get registry`, npm_config_registry) and the package name; nothing was installed"
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Registry text on the operator's terminal: one line, no control characters, bounded. */
function shown(value: unknown): string {
  const text = typeof value === "string" ? value : value === undefined ? "?" : JSON.stringify(value);
  const clean = text.replace(/[\p{Cc}\p{Cf}]+/gu, " ").trim();
  return clean.length > 200 ? `${clean.slice(0, 200)}…` : clean;
}
