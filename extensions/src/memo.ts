// A bounded memory of computed values: the charts' points come again with every batch, and
// what a value costs to convert (a time parsed, a plotly conversion) need not be paid twice.

/**
 * The value remembered under `key` in `memory`, made (and remembered) when there is none.
 * The memory holds at most `bound` values: it is emptied when full, which costs one round of
 * conversions and keeps no bookkeeping per value.
 *
 * @example
 * const parsed = new Map<string, number>();
 * remember(parsed, '2026-01-01 00:00:00', Date.parse, 1024);
 */
export function remember<V>(memory: Map<string, V>, key: string, make: (key: string) => V, bound: number): V {
  let found = memory.get(key);
  if (found === undefined) {
    found = make(key);
    if (memory.size >= bound) {
      memory.clear();
    }
    memory.set(key, found);
  }
  return found;
}
