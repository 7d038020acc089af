// This browser's own record of submissions per problem (the server keeps the results).
import { localStore } from "./storage.js";

const MAX_ENTRIES = 30;
const MAX_CODE_CHARS = 20000; // keeps the store well under the browser's quota

const key = (problemId) => `tj:history:${problemId}`;

export function loadHistory(problemId) {
  const list = localStore.get(key(problemId), []);
  return Array.isArray(list) ? list : [];
}

export function recordSubmission(problemId, entry) {
  const list = loadHistory(problemId).filter((e) => e.id !== entry.id);
  const stored = { ...entry };
  if (stored.code && stored.code.length > MAX_CODE_CHARS) delete stored.code;
  list.unshift(stored);
  localStore.set(key(problemId), list.slice(0, MAX_ENTRIES));
}

export function updateSubmission(problemId, id, patch) {
  const list = loadHistory(problemId).map((e) => (e.id === id ? { ...e, ...patch } : e));
  localStore.set(key(problemId), list);
}

export function hasAccepted(problemId) {
  return loadHistory(problemId).some((e) => e.mode === "submit" && e.verdict === "accepted");
}
