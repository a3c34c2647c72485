import { isMapping } from "../read.ts";

/** Names declared in daemon.yaml, valid or not: references to a broken entry are not reported twice. */
export interface DeclaredNames {
  targets: ReadonlySet<string>;
  bots: ReadonlySet<string>;
}

export function declaredNames(data: unknown): DeclaredNames {
  const root = isMapping(data) ? data : {};
  const keys = (value: unknown) => new Set(isMapping(value) ? Object.keys(value) : []);
  const chat = isMapping(root.channels) && isMapping(root.channels.chat) ? root.channels.chat : {};
  return { targets: keys(root.targets), bots: keys(chat.bots) };
}
