// English and French. The choice persists in localStorage and travels in the `lang` URL parameter.
// Lines the server writes in English (the "why" lines, warnings, error messages) are translated by
// message id: i18n/messages.json maps each id to the pattern of its English line, and the catalogs
// hold the `msg.<id>` template in each language (see `message()`).
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

let patterns = [];

function loadMessages() {
  loading.messages = loading.messages || fetch('/static/i18n/messages.json')
    .then((response) => response.json())
    .then((raw) => { patterns = Object.entries(raw).map(([id, source]) => ({ id, re: new RegExp(source) })); });
  return loading.messages;
}

export async function initLang() {
  current = initial();
  await Promise.all([load('en'), load(current), loadMessages()]);
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

/** A number the server wrote in English ("1,008", "4.59"), rewritten in the page's locale. */
function localNumber(text) {
  if (current === 'en' || !/^-?\d{1,3}(,\d{3})*(\.\d+)?$|^-?\d+(\.\d+)?$/.test(text)) return text;
  const decimals = (text.split('.')[1] || '').length;
  return new Intl.NumberFormat(locale(), { minimumFractionDigits: decimals, maximumFractionDigits: decimals }).format(Number(text.replace(/,/g, '')));
}

function matchLine(line, ids) {
  for (const { id, re } of patterns) {
    if (!ids(id)) continue;
    const found = re.exec(line);
    if (found) return { id, groups: found.groups || {} };
  }
  return null;
}

function fill(id, groups) {
  const template = dicts[current]?.[`msg.${id}`] ?? dicts.en?.[`msg.${id}`];
  if (template === undefined) return null;
  return template.replace(/\{(\w+)(?::([\w.]+))?\}/g, (whole, name, prefix) => {
    const value = groups[name];
    if (value === undefined) return '';
    if (prefix) return t(`${prefix}.${value}`);
    const part = `${id}.${name}`;
    const sub = matchLine(value, (other) => other === part || other.startsWith(`${part}.`));
    if (sub) return fill(sub.id, sub.groups) ?? value;
    return localNumber(value);
  });
}

/**
 * A line written by the server in English, in the page's language: the first message whose
 * pattern matches gives the id; its `msg.<id>` template is filled with the captured values
 * (numbers in the page's locale, optional parts through their own `<id>.<group>` messages).
 * A line no pattern knows is shown as it came.
 */
export function message(line) {
  const text = String(line ?? '');
  const found = matchLine(text, (id) => id.split('.').length === 2);
  return found ? (fill(found.id, found.groups) ?? text) : text;
}
