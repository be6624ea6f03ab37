// A process's bounded memory: a Map that keeps at most `max` entries, the least recently set going
// first (Map keeps insertion order; setting a key again moves it last). A base file beside config.ts
// and logger.ts, so every layer may use it (db/replicas.ts, server/votes/).
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
