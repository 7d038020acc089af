// JSON API client: every failure becomes an ApiError carrying the server's {code, message, field}.

export class ApiError extends Error {
  constructor(status, code, message, field = null, headers = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
    this.headers = headers;
  }
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
let me = null;

// Who is signed in on this page (and the session's CSRF token), asked once per page load.
export async function currentUser() {
  if (me === null) {
    me = fetch("/api/auth/me", { headers: { Accept: "application/json" } })
      .then((r) => (r.ok ? r.json() : { user: null, csrf_token: null }))
      .catch(() => ({ user: null, csrf_token: null }));
  }
  return me;
}

export async function api(path, { method = "GET", body, token, headers = {}, form } = {}) {
  const init = { method, headers: { Accept: "application/json", ...headers } };
  if (token) init.headers.Authorization = `Bearer ${token}`;
  else if (!SAFE_METHODS.has(method)) {
    // A signed-in page's session cookie needs the session's CSRF token on every change.
    const { csrf_token: csrf } = await currentUser();
    if (csrf) init.headers["X-CSRF-Token"] = csrf;
  }
  if (form) {
    init.body = form; // the browser sets the multipart boundary
  } else if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, "network_error", `Could not reach the server (${err.message}).`);
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const e = data && data.error;
    const retry = response.headers.get("Retry-After");
    let message = (e && e.message) || `${response.status} ${response.statusText}`;
    if (retry) message += ` (try again in ${retry} s)`;
    throw new ApiError(
      response.status,
      (e && e.code) || "http_error",
      message,
      (e && e.field) || null,
      response.headers,
    );
  }
  return { status: response.status, data, headers: response.headers };
}

export function describeError(err) {
  if (err instanceof ApiError) {
    const field = err.field ? ` (field: ${err.field})` : "";
    return `${err.message}${field}`;
  }
  return String((err && err.message) || err);
}
