// The JSON API, as README.md documents it for scripts: the console calls
// nothing else. Reads need no token; writes carry the bearer token, asked
// for once per tab and kept in sessionStorage.

const tokenKey = 'turnlog.token';

/** An answer that was not 2xx: message is the API's {"error"} text. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function tokenRequired() {
  return document.body.dataset.tokenRequired === 'true';
}

export function hasToken() {
  return !!sessionStorage.getItem(tokenKey);
}

export function forgetToken() {
  sessionStorage.removeItem(tokenKey);
  showTokenState();
}

export function showTokenState() {
  const el = document.getElementById('token-state');
  if (el) el.textContent = hasToken() ? 'set' : 'not set';
}

async function request(method, path, body, auth) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const token = auth && sessionStorage.getItem(tokenKey);
  if (token) headers.Authorization = 'Bearer ' + token;
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, `cannot reach the server (${e.message}); is turnlog serve still running?`);
  }
  let data = null;
  try {
    data = await res.json();
  } catch {
    // not JSON: reported below by status
  }
  if (!res.ok) {
    throw new ApiError(res.status, data && data.error ? data.error : `${res.status} ${res.statusText}`);
  }
  return data;
}

/** GET a JSON route. */
export function get(path) {
  return request('GET', path);
}

/**
 * A write (PUT, POST, ...) with the token. A 401 forgets the token, asks
 * for it again with the server's reason, and retries once.
 */
export async function write(method, path, body) {
  if (tokenRequired() && !hasToken()) await askToken();
  try {
    return await request(method, path, body, true);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    forgetToken();
    await askToken(e.message);
    return request(method, path, body, true);
  }
}

let asking = null;

/**
 * Shows the token dialog; resolves once a token is stored, rejects with a
 * 401 ApiError when the user cancels. Concurrent callers share one dialog.
 */
export function askToken(reason) {
  if (asking) return asking;
  const dialog = document.getElementById('token-dialog');
  const input = document.getElementById('token-input');
  const why = document.getElementById('token-reason');
  if (reason) why.textContent = reason;
  input.value = '';
  asking = new Promise((resolve, reject) => {
    dialog.addEventListener('close', () => {
      asking = null;
      const token = input.value.trim();
      input.value = '';
      if (dialog.returnValue === 'ok' && token) {
        sessionStorage.setItem(tokenKey, token);
        showTokenState();
        resolve();
      } else {
        reject(new ApiError(401, 'no token given: changes need the token turnlog serve was started with (--token or TURNLOG_TOKEN)'));
      }
    }, { once: true });
  });
  dialog.returnValue = '';
  dialog.showModal();
  input.focus();
  return asking;
}

/** Percent-encodes one path segment or query value. */
export const enc = encodeURIComponent;
