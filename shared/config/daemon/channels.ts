import { readChatApiUrl } from "../outputs.ts";
import { checkKeys, quote, str, type YamlMap } from "../read.ts";
import type { SecretSource } from "../secret-source.ts";
import { secretSource } from "../secrets.ts";
import { type ConfigFile, formatPath, type KeyPath } from "../source.ts";
import type { DaemonSettings } from "../types.ts";
import { child, entries } from "./read-helpers.ts";

export function readChannels(f: ConfigFile, root: YamlMap): DaemonSettings["channels"] {
  const channels = child(f, root, "channels", []) ?? {};
  checkKeys(f, channels, ["channels"], ["chat"]);
  const chat = child(f, channels, "chat", ["channels"]) ?? {};
  checkKeys(f, chat, ["channels", "chat"], ["bots", "api_url"]);
  const bots: Record<string, { token: SecretSource }> = {};
  for (const [name, raw] of entries(f, chat, "bots", ["channels", "chat"])) {
    const path = ["channels", "chat", "bots", name];
    checkKeys(f, raw, path, ["token", "token_ref"]);
    const token = secretSource(f, raw, path, {
      secretKey: "token",
      refKey: "token_ref",
      expectedRef: `chat/${name}`,
    });
    if (token) bots[name] = { token };
  }
  return { chat: { apiUrl: readChatApiUrl(f, chat), bots } };
}

/** `{ bot, channel }` with `bot` an entry of `channels.chat.bots`; shared with the chat output handler. */
export function readChatTarget(
  f: ConfigFile,
  raw: YamlMap,
  path: KeyPath,
  declaredBots: ReadonlySet<string> | undefined,
): { bot: string; channel: string } | undefined {
  checkKeys(f, raw, path, ["bot", "channel"]);
  const bot = str(f, raw, "bot", path, {
    required: true,
    hint: " - name an entry of channels.chat.bots in daemon.yaml",
  });
  const channel = str(f, raw, "channel", path, {
    required: true,
    hint: " - give the chat channel id, e.g. C0123456",
  });
  if (bot && declaredBots && !declaredBots.has(bot)) {
    f.report(
      [...path, "bot"],
      "unknown_bot",
      `chat bot ${quote(bot)} at "${formatPath([...path, "bot"])}" is not defined - add it to "channels.chat.bots" in daemon.yaml (defined: ${[...declaredBots].join(", ") || "none"})`,
    );
    return undefined;
  }
  return bot && channel ? { bot, channel } : undefined;
}
