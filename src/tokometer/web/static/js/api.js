// The JSON API: same shapes as `tokometer ... --json`. Errors arrive as {"error": message}.
export class ApiError extends Error {
  constructor(message, status, body = {}) {
    super(message);
    this.status = status;
    this.field = body.field || null;
    this.suggestions = body.suggestions || [];
  }
}

async function parse(response) {
  let body = null;
  try { body = await response.json(); } catch { body = null; }
  if (!response.ok) {
    const message = (body && body.error) || `${response.status} ${response.statusText}`;
    throw new ApiError(message, response.status, body || {});
  }
  return body;
}

export async function get(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '' && v != null));
  const url = query.toString() ? `${path}?${query}` : path;
  return parse(await fetch(url, { headers: { accept: 'application/json' } }));
}

export async function post(path, body) {
  return parse(await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  }));
}

const cache = {};

/** A catalog list (hardware, models, quants, engines), fetched once per page load. */
export function catalog(kind) {
  cache[kind] = cache[kind] || get(`/api/${kind}`);
  return cache[kind];
}

export function meta() {
  cache.meta = cache.meta || get('/api/meta');
  return cache.meta;
}
