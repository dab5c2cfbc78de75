// Boot: language, navigation, then the page named by the path. Each page keeps its state in the URL.
import { meta } from './api.js';
import { clear, h } from './dom.js';
import { LANGS, initLang, lang, setLang, t } from './i18n.js';
import { showActiveTab } from './navscroll.js';
import { rich } from './widgets.js';

const PAGES = ['throughput', 'batch', 'latency', 'memory', 'utilisation', 'curves', 'hardware', 'feel', 'serving', 'runs'];
const loaders = {
  throughput: () => import('./pages/throughput.js'),
  batch: () => import('./pages/batch.js'),
  latency: () => import('./pages/latency.js'),
  memory: () => import('./pages/memory.js'),
  utilisation: () => import('./pages/utilisation.js'),
  curves: () => import('./pages/curves.js'),
  hardware: () => import('./pages/hardware.js'),
  feel: () => import('./pages/feel.js'),
  serving: () => import('./pages/serving.js'),
  runs: () => import('./pages/runs.js'),
};

function current() {
  const name = location.pathname.replace(/^\/+|\/+$/g, '');
  return PAGES.includes(name) ? name : 'throughput';
}

function nav(page) {
  clear(document.getElementById('nav'), h('ul', {}, PAGES.map((name) => h('li', {},
    h('a', { href: `/${name}?lang=${lang()}`, 'aria-current': name === page ? 'page' : null, 'data-page': name }, t(`nav.${name}`))))));
  showActiveTab(document.getElementById('nav'), document.querySelector('#nav a[aria-current=page]'));
  document.querySelector('.brand').setAttribute('href', `/?lang=${lang()}`);
  clear(document.getElementById('lang'), LANGS.map((code) => h('button', {
    type: 'button', 'data-lang': code, 'aria-pressed': String(code === lang()), title: t(`lang.${code}`),
    onclick: async () => { if (code !== lang()) { await setLang(code); await render(); } },
  }, code.toUpperCase())));
}

async function footer() {
  const info = await meta();
  clear(document.getElementById('foot'),
    h('p', {}, t('foot.formula')),
    h('p', { class: 'muted' }, t('foot.local', { version: info.version }), ' · ',
      h('a', { href: '/api/meta' }, 'JSON API')));
}

let running = null;

async function render() {
  const page = current();
  document.querySelector('.skip').textContent = t('a11y.skip');
  running?.stop?.();
  document.title = `${t(`nav.${page}`)} · tokometer`;
  nav(page);
  const main = document.getElementById('main');
  const body = h('div', { class: 'page', 'data-page': page });
  clear(main,
    h('header', { class: 'page-head' }, h('h1', {}, t(`p.${page}.title`)), h('p', { class: 'lead' }, rich(t(`p.${page}.lead`)))),
    body);
  const module = await loaders[page]();
  const [mounted] = await Promise.all([module.mount(body), footer()]);
  running = mounted;
  document.body.dataset.ready = 'true';
}

await initLang();
await render();
