import { checkKeys, mapping, num, type YamlMap } from "../read.ts";
import { type ConfigFile, formatPath, type KeyPath } from "../source.ts";
import type { TargetPrice } from "../types.ts";

const PRICE_KEYS = ["input", "output", "cache_read"];

/**
 * `targets.<name>.price: { input, output, cache_read? }`: USD per million tokens, what a pipeline's
 * `budget.cost` is counted in. `cache_read` defaults to `input` (the provider's discount unknown).
 */
export function readPrice(f: ConfigFile, raw: YamlMap, path: KeyPath): TargetPrice | null | undefined {
  if (raw.price === undefined || raw.price === null) return null;
  const pricePath = [...path, "price"];
  const price = mapping(f, raw.price, pricePath, " such as { input: 3, output: 15, cache_read: 0.3 }");
  if (!price) return undefined;
  checkKeys(f, price, pricePath, PRICE_KEYS);
  const hint = ` - give USD per million tokens, e.g. ${formatPath(pricePath)}: { input: 3, output: 15 }`;
  const input = num(f, price, "input", pricePath, { required: true, hint, min: 0, max: 10_000 });
  const output = num(f, price, "output", pricePath, { required: true, hint, min: 0, max: 10_000 });
  const cacheRead = num(f, price, "cache_read", pricePath, { min: 0, max: 10_000 });
  if (input === undefined || output === undefined) return undefined;
  if (price.cache_read != null && cacheRead === undefined) return undefined;
  return { input, output, ...(cacheRead !== undefined ? { cacheRead } : {}) };
}
