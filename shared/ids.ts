import { randomBytes } from "node:crypto";

/** Kinds of record ids. Prefixes are part of the contract (`svc trace` accepts them). */
export const ID_PREFIXES = {
  trigger: "trg_",
  workload: "run_",
  invocation: "inv_",
  task: "tsk_",
  artifact: "art_",
  note: "not_",
  token: "tok_",
  evalCase: "evc_",
  evalRun: "evr_",
  backtest: "bkt_",
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";
const ID_BODY_LENGTH = 20;

/**
 * Random, not time-ordered: short prefixes must stay unambiguous like git's, and
 * time-ordered ids would make every id created in one second share a prefix.
 */
export function newId(kind: IdKind): string {
  const bytes = randomBytes(ID_BODY_LENGTH);
  let body = "";
  for (const byte of bytes) body += BASE32[byte & 31];
  return ID_PREFIXES[kind] + body;
}

const ID_PATTERN = /^(trg|run|inv|tsk|art|not|tok|evc|evr|bkt)_[a-z2-7]+$/;

export function isId(value: string): boolean {
  return ID_PATTERN.test(value);
}

/** An id of `kind`, at most 64 characters after its prefix: safe to put in SQL text or a NOTIFY. */
export function isIdOf(kind: IdKind, value: string): boolean {
  const prefix = ID_PREFIXES[kind];
  return value.startsWith(prefix) && value.length <= prefix.length + 64 && isId(value);
}
