import { checkKeys, int, type YamlMap } from "../read.ts";
import type { ConfigFile } from "../source.ts";
import type { DaemonSettings } from "../types.ts";
import { child } from "./read-helpers.ts";

export const DEFAULT_CHECKOUT_RETENTION_DAYS = 30;
export const DEFAULT_TRANSCRIPT_RETENTION_DAYS = 90;

export function readWorkspaces(f: ConfigFile, root: YamlMap): DaemonSettings["workspaces"] {
  const workspaces = child(f, root, "workspaces", []) ?? {};
  const path = ["workspaces"];
  checkKeys(f, workspaces, path, ["checkoutRetentionDays", "transcriptRetentionDays"]);
  const checkout =
    int(f, workspaces, "checkoutRetentionDays", path, { min: 1, max: 36_500 }) ??
    DEFAULT_CHECKOUT_RETENTION_DAYS;
  const explicit = int(f, workspaces, "transcriptRetentionDays", path, { min: 1, max: 36_500 });
  const transcript = explicit ?? DEFAULT_TRANSCRIPT_RETENTION_DAYS;
  if (transcript < checkout && explicit !== undefined) {
    f.report(
      [...path, "transcriptRetentionDays"],
      "value_clamped",
      `"workspaces.transcriptRetentionDays" (${transcript}) is below "workspaces.checkoutRetentionDays" (${checkout}) and is raised to ${checkout} - transcripts are kept at least as long as checkouts`,
      "warning",
    );
  }
  return { checkoutRetentionDays: checkout, transcriptRetentionDays: Math.max(transcript, checkout) };
}
