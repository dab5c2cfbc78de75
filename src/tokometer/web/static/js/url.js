// A page's state lives in its query string, so any result can be shared as a link.
export function readState() {
  return Object.fromEntries(new URLSearchParams(location.search));
}

/** Replace the query string with `state` (empty values dropped); the language always travels along. */
export function writeState(state, lang) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(state)) {
    if (value === '' || value === null || value === undefined || value === false) continue;
    params.set(key, String(value));
  }
  if (lang) params.set('lang', lang);
  const query = params.toString();
  const url = location.pathname + (query ? `?${query}` : '');
  if (url !== location.pathname + location.search) history.replaceState(null, '', url);
}
