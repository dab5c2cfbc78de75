// English and French. The choice persists in localStorage and travels in the `lang` URL parameter.
import { writeState, readState } from './url.js';

export const LANGS = ['en', 'fr'];
const KEY = 'tokometer.lang';
const dicts = {};
let current = 'en';

function initial() {
  const asked = new URLSearchParams(location.search).get('lang');
  if (LANGS.includes(asked)) return asked;
  let stored = null;
  try { stored = localStorage.getItem(KEY); } catch { /* storage may be disabled */ }
  if (LANGS.includes(stored)) return stored;
  return (navigator.language || '').toLowerCase().startsWith('fr') ? 'fr' : 'en';
}

const loading = {};

function load(lang) {
  loading[lang] = loading[lang] || fetch(`/static/i18n/${lang}.json`)
    .then((response) => response.json())
    .then((dict) => { dicts[lang] = dict; });
  return loading[lang];
}

export async function initLang() {
  current = initial();
  await Promise.all([load('en'), load(current)]);
  remember(current);
  return current;
}

function remember(lang) {
  try { localStorage.setItem(KEY, lang); } catch { /* storage may be disabled */ }
  document.documentElement.lang = lang;
}

export async function setLang(lang) {
  if (!LANGS.includes(lang)) return;
  await load(lang);
  current = lang;
  remember(lang);
  writeState(readState(), lang);
}

export function lang() {
  return current;
}

export function locale() {
  return current === 'fr' ? 'fr-FR' : 'en-US';
}

/** The text for `key` in the current language, with {name} placeholders filled from `vars`. */
export function t(key, vars = {}) {
  const text = dicts[current]?.[key] ?? dicts.en?.[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}
