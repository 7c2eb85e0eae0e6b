/** The name in `known` that `name` most likely misspells (case, `_`, `-`, spaces ignored; up to `maxEdits` edits). */
export function nearestName<T extends string>(name: string, known: readonly T[], maxEdits = 2): T | undefined {
  const squashed = squash(name);
  let best: T | undefined;
  let bestEdits = maxEdits + 1;
  for (const candidate of known) {
    const edits = editDistance(squashed, squash(candidate), bestEdits - 1);
    if (edits < bestEdits) {
      best = candidate;
      bestEdits = edits;
    }
  }
  return best;
}

function squash(name: string): string {
  return name.toLowerCase().replace(/[\s_-]/g, '');
}

/** Levenshtein distance of `a` and `b`, or `max + 1` as soon as it is known to exceed `max`. */
function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      row.push(d);
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin > max) return max + 1;
    prev = row;
  }
  return prev[b.length]!;
}
