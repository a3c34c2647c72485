import { offLoopback } from "../daemon/server.ts";
import { checkKeys, isMapping, mapping, quote, strList, type YamlMap } from "../read.ts";
import { readSchedules } from "../schedule.ts";
import { type ConfigFile, formatPath, type KeyPath } from "../source.ts";
import type { DaemonSettings, EventMatcher, PipelineArg, PipelineTrigger, VerifyKind } from "../types.ts";
import type { PipelineDraft } from "./draft.ts";
import { checkFiltersOnGitlab, FILTER_KEYS, readFilters, refuseFilters } from "./trigger-filters.ts";

const REPO_NAME = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

export function readTrigger(
  f: ConfigFile,
  root: YamlMap,
  name: string,
  args: Record<string, PipelineArg>,
): PipelineTrigger | null {
  if (root.trigger === undefined || root.trigger === null) return null;
  const raw = mapping(f, root.trigger, ["trigger"], " with keys webhook, codehost, tracker or schedule");
  if (!raw) return null;
  checkKeys(f, raw, ["trigger"], ["webhook", "codehost", "tracker", "schedule"]);
  return {
    webhook: strList(f, raw, "webhook", ["trigger"]) ?? [],
    codehost: readMatchers(f, raw, "codehost"),
    tracker: readMatchers(f, raw, "tracker"),
    schedule: readSchedules(f, raw, name, args),
  };
}

/** `[event, ...]`, `{ events, repos }`, or a list mixing event names and such objects. */
function readMatchers(f: ConfigFile, raw: YamlMap, key: "codehost" | "tracker"): EventMatcher[] {
  const value = raw[key];
  const path = ["trigger", key];
  if (value === undefined || value === null) return [];
  const shape = `"trigger.${key}" must be a list of event names (e.g. [pull_request.opened]) or { events: [...], repos: [owner/name, ...] }${key === "codehost" ? " or { command: <word> } or { replies: true }" : ""}`;
  const items = Array.isArray(value) ? value : [value];
  const matchers: EventMatcher[] = [];
  const bare: string[] = [];
  items.forEach((item, index) => {
    const itemPath: KeyPath = Array.isArray(value) ? [...path, index] : path;
    if (typeof item === "string" && item.trim() !== "") {
      bare.push(item);
    } else if (isMapping(item) && key === "codehost" && "command" in item) {
      refuseFilters(f, item, itemPath, "a comment command");
      const command = readCommand(f, item, itemPath);
      if (command) matchers.push(command);
    } else if (isMapping(item) && key === "codehost" && "replies" in item) {
      refuseFilters(f, item, itemPath, "a reply");
      const replies = readReplies(f, item, itemPath);
      if (replies) matchers.push(replies);
    } else if (isMapping(item)) {
      checkKeys(f, item, itemPath, ["events", "repos", ...(key === "codehost" ? FILTER_KEYS : [])]);
      const events = strList(f, item, "events", itemPath, {
        required: true,
        hint: ", e.g. events: [pull_request.opened]",
      });
      const repos = strList(f, item, "repos", itemPath) ?? [];
      for (const [i, repo] of repos.entries()) {
        if (!REPO_NAME.test(repo))
          f.report(
            [...itemPath, "repos", i],
            "invalid_value",
            `repository ${quote(repo)} must be written <owner>/<name>`,
          );
      }
      const filters = key === "codehost" && events ? readFilters(f, item, itemPath, events) : undefined;
      if (events?.length) matchers.push({ events, repos, ...(filters ? { filters } : {}) });
      else if (events)
        f.report(
          [...itemPath, "events"],
          "required",
          `"${formatPath([...itemPath, "events"])}" must not be empty`,
        );
    } else {
      f.report(itemPath, "invalid_type", shape);
    }
  });
  if (bare.length) matchers.unshift({ events: bare, repos: [] });
  return matchers;
}

/** Words svc answers itself (worker/event/command.ts): a pipeline cannot take them. */
export const BUILT_IN_COMMANDS = ["pause", "resume"];
const COMMAND_WORD = /^[a-z][a-z0-9_-]*$/;
/** The events a comment command arrives in: a GitHub pull request comment, a GitLab note. */
export const COMMAND_EVENTS = ["issue_comment.created", "note"];

/** `{ command: <word>, repos? }`: fires on `@<bot_name> <word> ...` commented on a pull request. */
function readCommand(f: ConfigFile, item: YamlMap, path: KeyPath): EventMatcher | undefined {
  checkKeys(f, item, path, ["command", "repos"]);
  const word = typeof item.command === "string" ? item.command : undefined;
  if (!word || !COMMAND_WORD.test(word)) {
    f.report(
      [...path, "command"],
      "invalid_value",
      `"${formatPath([...path, "command"])}" must be one lower-case word, e.g. command: review (got ${quote(item.command)})`,
    );
    return undefined;
  }
  if (BUILT_IN_COMMANDS.includes(word)) {
    f.report(
      [...path, "command"],
      "invalid_value",
      `command ${quote(word)} is svc's own (pause and resume stop and restart a pull request's automatic runs) - choose another word`,
    );
    return undefined;
  }
  const repos = strList(f, item, "repos", path) ?? [];
  return { events: COMMAND_EVENTS, repos, command: word };
}

/** The event a reply in a review thread arrives in (GitHub's). */
export const REPLY_EVENTS = ["pull_request_review_comment.created"];

/** `{ replies: true, repos? }`: fires on a reply in one of svc's own review threads. */
function readReplies(f: ConfigFile, item: YamlMap, path: KeyPath): EventMatcher | undefined {
  checkKeys(f, item, path, ["replies", "repos"]);
  if (item.replies !== true) {
    f.report(
      [...path, "replies"],
      "invalid_value",
      `"${formatPath([...path, "replies"])}" must be true (got ${quote(item.replies)}) - write { replies: true } to answer replies in svc's review threads, or remove the entry`,
    );
    return undefined;
  }
  const repos = strList(f, item, "repos", path) ?? [];
  return { events: REPLY_EVENTS, repos, replies: true };
}

export function checkTriggerSources(f: ConfigFile, draft: PipelineDraft, daemon: DaemonSettings): void {
  const trigger = draft.trigger;
  if (!trigger) return;
  const sources = Object.values(daemon.webhooks.sources);
  trigger.webhook.forEach((name, index) => {
    const source = daemon.webhooks.sources[name];
    const path = ["trigger", "webhook", index];
    if (source && source.verify !== "bearer") {
      const serves = triggerOf(source.verify);
      f.report(
        path,
        "verify_kind_mismatch",
        `webhook ${quote(name)} points at source "webhooks.sources.${name}", whose verify is ${source.verify}, not bearer - a ${source.verify} source serves trigger.${serves}; add a bearer source under another name or move the events to trigger.${serves}`,
      );
    } else if (!source) {
      const offMachine = offLoopback(daemon);
      f.report(
        path,
        "webhook_source_missing",
        `webhook ${quote(name)} has no source, so every request to /webhooks/${name} is refused with 401 - add "webhooks.sources.${name}: { verify: bearer, secret: \${ENV_NAME} }" to daemon.yaml${offMachine ? ` (the daemon refuses to start: it binds ${daemon.server.host}, reachable off the machine)` : ""}`,
        offMachine ? "error" : "warning",
      );
    }
  });
  checkFiltersOnGitlab(f, trigger.codehost, daemon);
  for (const kind of ["codehost", "tracker"] as const) {
    if (trigger[kind].length === 0 || sources.some((source) => triggerOf(source.verify) === kind)) continue;
    f.report(
      ["trigger", kind],
      "webhook_source_missing",
      `"trigger.${kind}" has no ${kind === "codehost" ? "codehost or gitlab" : kind} source to receive its events - add "webhooks.sources.<name>: { verify: ${kind}, secret_ref: webhook/<name> }" to daemon.yaml${kind === "codehost" ? " (verify: gitlab for GitLab)" : ""}`,
    );
  }
}

/** The trigger a source's deliveries fire: GitLab's events are code-host events, like GitHub's. */
function triggerOf(verify: VerifyKind): "webhook" | "codehost" | "tracker" {
  if (verify === "bearer") return "webhook";
  return verify === "gitlab" ? "codehost" : verify;
}
