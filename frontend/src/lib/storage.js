// localStorage/sessionStorage that never throws (private windows, full quota, disabled storage).

function safe(store) {
  try {
    const s = window[store];
    const probe = "__tj_probe__";
    s.setItem(probe, "1");
    s.removeItem(probe);
    return s;
  } catch {
    return null;
  }
}

const local = safe("localStorage");
const session = safe("sessionStorage");

function get(s, key, fallback) {
  if (!s) return fallback;
  try {
    const raw = s.getItem(key);
    return raw === null ? fallback : JSON.parse(raw);
  } catch {
    return fallback;
  }
}

function set(s, key, value) {
  if (!s) return false;
  try {
    s.setItem(key, JSON.stringify(value));
    return true;
  } catch {
    return false;
  }
}

function remove(s, key) {
  if (s) s.removeItem(key);
}

export const localStore = {
  get: (key, fallback = null) => get(local, key, fallback),
  set: (key, value) => set(local, key, value),
  remove: (key) => remove(local, key),
};

export const sessionStore = {
  get: (key, fallback = null) => get(session, key, fallback),
  set: (key, value) => set(session, key, value),
  remove: (key) => remove(session, key),
};
