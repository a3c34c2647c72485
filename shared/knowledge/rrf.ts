/** Reciprocal-rank fusion constant: the k of 1 / (k + rank) (Cormack et al. use 60). */
export const RRF_K = 60;

export interface Ranked<T> {
  key: string;
  item: T;
}

export interface Fused<T> {
  key: string;
  /** from the best-placed list that holds the key */
  item: T;
  /** Σ 1 / (k + rank) over the lists, divided by its maximum (every list ranking it first): [0, 1] */
  score: number;
}

/**
 * Fuses rankings (best first, ranks from 1) by reciprocal-rank fusion. The sum is normalised by
 * its largest possible value, so `minScore` reads the same whether one list or several were fused.
 */
export function reciprocalRankFusion<T>(lists: readonly (readonly Ranked<T>[])[], k = RRF_K): Fused<T>[] {
  const fused = new Map<string, { item: T; sum: number; best: number }>();
  for (const list of lists) {
    list.forEach((entry, index) => {
      const rank = index + 1;
      const current = fused.get(entry.key);
      if (!current) fused.set(entry.key, { item: entry.item, sum: 1 / (k + rank), best: rank });
      else {
        current.sum += 1 / (k + rank);
        if (rank < current.best) {
          current.best = rank;
          current.item = entry.item;
        }
      }
    });
  }
  const max = lists.length / (k + 1);
  return [...fused.entries()]
    .map(([key, value]) => ({ key, item: value.item, score: max > 0 ? value.sum / max : 0 }))
    .sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
