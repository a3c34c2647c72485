import type { DeclaredNames } from "../daemon/declared-names.ts";
import type { DaemonSettings, Pipeline, Skill } from "../types.ts";

/** What one pipeline file says on its own; references to other files are checked by `resolvePipeline`. */
export interface PipelineDraft extends Omit<Pipeline, "version"> {
  version?: string;
  /** true when the file sets `version`, even to an invalid value (already reported) */
  versionDeclared: boolean;
}

/** What a pipeline's references are checked against. */
export interface PipelineContext {
  daemon: DaemonSettings;
  /** names daemon.yaml declares, including entries that failed validation */
  declared: DeclaredNames;
  agents: ReadonlySet<string>;
  skills: Readonly<Record<string, Skill>>;
  /** false when daemon.yaml itself could not be read: references into it are then not judged */
  daemonKnown: boolean;
}
