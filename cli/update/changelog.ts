import { readFile } from "node:fs/promises";
import { join } from "node:path";
import semver from "semver";

/** One `## <version>` section of CHANGELOG.md. */
export interface Release {
  version: string;
  notes: string;
}

export function parseChangelog(text: string): Release[] {
  const releases: Release[] = [];
  const sections = text.split(/^## /m).slice(1);
  for (const section of sections) {
    const newline = section.indexOf("\n");
    const version = section.slice(0, newline).trim();
    if (!semver.valid(version)) continue;
    releases.push({ version, notes: section.slice(newline + 1).trim() });
  }
  return releases;
}

/** The releases after `from` up to and including `to`, newest first, from the package at `root`. */
export async function notesBetween(root: string, from: string, to: string): Promise<Release[]> {
  const text = await readFile(join(root, "CHANGELOG.md"), "utf8").catch(() => "");
  return parseChangelog(text).filter(
    (release) => semver.gt(release.version, from) && semver.lte(release.version, to),
  );
}
