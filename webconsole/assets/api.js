// The JSON API, as docs/http-api.md documents it for scripts: the console calls
// nothing else. When the server has a token, every call carries it (reads
// too, and the live stream): it is asked for once per tab, or taken from
// the address (#token=...), and kept in sessionStorage.

import { showModal } from './dom.js';

const tokenKey = 'turnlog.token';

// The address turnlog serve prints, the console's with #token=..., hands the
// token over once: it is stored for the tab and taken out of the address
// bar at once, so it is not bookmarked, shared with the URL, or kept in
// the history. (A fragment is never sent to the server, nor in a Referer.)
// Such a link pasted into a tab already on the page changes only the
// fragment, which loads nothing: the page is loaded again with the token.
takeTokenFromAddress();
window.addEventListener('hashchange', () => {
  if (takeTokenFromAddress()) location.reload();
});

/** Stores a #token=... of the address and removes it; true if there was one. */
function takeTokenFromAddress() {
  if (!location.hash.startsWith('#')) return false;
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  if (token === null) return false;
  if (token.trim()) sessionStorage.setItem(tokenKey, token.trim());
  params.delete('token');
  const rest = params.toString();
  history.replaceState(history.state, '', location.pathname + location.search + (rest ? '#' + rest : ''));
  return true;
}

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

function authHeaders(headers) {
  const token = sessionStorage.getItem(tokenKey);
  if (token) headers.Authorization = 'Bearer ' + token;
  return headers;
}

async function request(method, path, body) {
  const headers = authHeaders({ Accept: 'application/json' });
  if (body !== undefined) headers['Content-Type'] = 'application/json';
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

/**
 * Calls the API with the token. A 401 forgets the token, asks for it again
 * with the server's reason, and retries once.
 */
async function withToken(method, path, body) {
  if (tokenRequired() && !hasToken()) await askToken();
  try {
    return await request(method, path, body);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    forgetToken();
    await askToken(e.message);
    return request(method, path, body);
  }
}

/** GET a JSON route. */
export function get(path) {
  return withToken('GET', path);
}

/** A write (PUT, POST, ...). */
export function write(method, path, body) {
  return withToken(method, path, body);
}

/**
 * Follows a Server-Sent Events route with the token, which EventSource
 * cannot send: fetch reads the stream and parses it. The result works as
 * an EventSource for what the console uses: addEventListener(type, fn)
 * receives MessageEvents, onerror is called when the connection drops (a
 * new one follows after a pause), close() stops. A token dialog cancelled
 * by the user ends the stream with an 'end' event.
 */
export function eventStream(path) {
  const target = new EventTarget();
  const stream = {
    onerror: null,
    addEventListener: (type, fn) => target.addEventListener(type, fn),
    close: () => {
      stopped = true;
      if (abort) abort.abort();
    },
  };
  let stopped = false;
  let abort = null;
  const dispatch = (type, data) => target.dispatchEvent(new MessageEvent(type, { data }));
  (async () => {
    let retry = 2000;
    while (!stopped) {
      abort = new AbortController();
      try {
        if (tokenRequired() && !hasToken()) await askToken();
        const res = await fetch(path, { headers: authHeaders({ Accept: 'text/event-stream' }), signal: abort.signal, cache: 'no-store' });
        if (res.status === 401) {
          let msg = 'the token is wrong';
          try {
            msg = (await res.json()).error || msg;
          } catch {
            // not JSON
          }
          forgetToken();
          await askToken(msg);
          continue;
        }
        if (!res.ok || !res.body) throw new Error(`${res.status} ${res.statusText}`);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        let type = '';
        let data = [];
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            let line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (line.endsWith('\r')) line = line.slice(0, -1);
            if (line === '') {
              if (data.length) dispatch(type || 'message', data.join('\n'));
              type = '';
              data = [];
              continue;
            }
            if (line.startsWith(':')) continue; // a comment (keep-alive)
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            let val = colon < 0 ? '' : line.slice(colon + 1);
            if (val.startsWith(' ')) val = val.slice(1);
            if (field === 'event') type = val;
            else if (field === 'data') data.push(val);
            else if (field === 'retry' && /^\d+$/.test(val)) retry = Number(val);
          }
        }
      } catch (e) {
        if (stopped) return;
        if (e instanceof ApiError && e.status === 401) {
          // The user cancelled the token dialog: stop asking.
          stopped = true;
          dispatch('end', JSON.stringify({ error: e.message }));
          return;
        }
      }
      if (stopped) return;
      if (stream.onerror) stream.onerror();
      await new Promise((r) => setTimeout(r, retry));
    }
  })();
  return stream;
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
        reject(new ApiError(401, 'no token given: this server needs the token in its data directory (.turnlog/auth/http.token) or the one it was given (TURNLOG_TOKEN)'));
      }
    }, { once: true });
  });
  dialog.returnValue = '';
  showModal(dialog);
  input.focus();
  return asking;
}

/** Percent-encodes one path segment or query value. */
export const enc = encodeURIComponent;
