// Hardware panorama and GPU tiers: every catalog device, sortable and filterable, with its source
// and the chosen model's ceiling and estimate on it.
import { ApiError, post } from '../api.js';
import { clear, h } from '../dom.js';
import { FIELDS, datalists, field, markField, rememberSetup, startState, toApi, validate } from '../form.js';
import { int, num } from '../format.js';
import { lang, message, t } from '../i18n.js';
import { writeState } from '../url.js';
import { errorBox } from '../widgets.js';

const SETUP_FIELDS = ['model', 'quant', 'engine', 'context_tokens'];
const DEFAULTS = { model: 'llama-3.1-8b', quant: 'q4-k-m', sort: 'estimate', dir: 'desc' };
const COLUMNS = [
  ['name', (r) => r.hardware.name, 'text'],
  ['vendor', (r) => r.hardware.vendor, 'text'],
  ['segment', (r) => r.hardware.segment, 'text'],
  ['memory', (r) => r.hardware.memory_gb, 'num'],
  ['bandwidth', (r) => r.hardware.memory_bandwidth_gb_per_s, 'num'],
  ['tflops', (r) => r.hardware.fp16_tflops, 'num'],
  ['year', (r) => r.hardware.launch_year, 'num'],
  ['ceiling', (r) => r.ceiling_tok_s, 'num'],
  ['estimate', (r) => r.estimate_tok_s, 'num'],
  ['fits', (r) => (r.fits ? 1 : 0), 'num'],
  ['source', (r) => r.hardware.source, 'text'],
];

// the first rows (by the chosen sort) and a button for the rest: not a page 11,000 px tall
const FIRST_ROWS = { phone: 25, wide: 60 };

function narrow() {
  return (document.documentElement.clientWidth || window.innerWidth) < 720;
}

function tierLabel(tier) {
  return tier === null ? t('hw.tierTop') : t('hw.tierUpTo', { gb: int(tier) });
}

function sourceCell(source) {
  if (/^https?:\/\//.test(source)) {
    let host = source;
    try { host = new URL(source).hostname.replace(/^www\./, ''); } catch { /* keep the text */ }
    return h('a', { href: source, target: '_blank', rel: 'noopener noreferrer', title: source }, host);
  }
  return h('span', { class: 'muted', title: source }, source.length > 40 ? `${source.slice(0, 39)}…` : source);
}

export async function mount(root) {
  const state = { ...DEFAULTS, ...startState() };
  const form = h('form', { class: 'inputs wide', novalidate: true, 'data-testid': 'form' });
  const filters = h('div', { class: 'filters' });
  const tiers = h('div', { class: 'tiers', 'data-testid': 'tiers' });
  const out = h('div', { class: 'result', 'data-testid': 'result' });
  let data = null;
  let timer = null;
  let showAll = false;

  form.append(h('div', { class: 'grid four' }, await Promise.all(SETUP_FIELDS.map((name) => field(name, state[name] ?? '')))));
  const search = h('input', { type: 'search', name: 'q', value: state.q || '', placeholder: t('hw.search'), 'aria-label': t('hw.search'), 'data-testid': 'search' });
  const vendor = h('select', { name: 'vendor', 'aria-label': t('hw.vendor') });
  const segment = h('select', { name: 'segment', 'aria-label': t('hw.segment') });
  const tierSel = h('select', { name: 'tier', 'aria-label': t('hw.tier') });
  const fitsOnly = h('input', { type: 'checkbox', name: 'fits', checked: state.fits === '1' });
  filters.append(search, vendor, segment, tierSel, h('label', { class: 'check' }, fitsOnly, t('hw.fitsOnly')));

  function save() {
    const values = {};
    for (const name of SETUP_FIELDS) values[name] = form.elements[name].value;
    writeState({
      ...values, q: search.value, vendor: vendor.value, segment: segment.value, tier: tierSel.value,
      fits: fitsOnly.checked ? '1' : '', sort: state.sort, dir: state.dir,
    }, lang());
  }

  function options(select, label, values, selected, name = (v) => v) {
    clear(select, h('option', { value: '' }, label), values.map((v) => h('option', { value: v, selected: String(v) === selected }, name(v))));
  }

  function visible() {
    const q = search.value.trim().toLowerCase();
    const rows = data.rows.filter((r) => {
      const hw = r.hardware;
      if (q && !`${hw.name} ${hw.id} ${(hw.aliases || []).join(' ')}`.toLowerCase().includes(q)) return false;
      if (vendor.value && hw.vendor !== vendor.value) return false;
      if (segment.value && hw.segment !== segment.value) return false;
      if (tierSel.value && String(r.tier_gb) !== tierSel.value) return false;
      if (fitsOnly.checked && !r.fits) return false;
      return true;
    });
    const [, key, kind] = COLUMNS.find(([name]) => name === state.sort) || COLUMNS[8];
    const sign = state.dir === 'asc' ? 1 : -1;
    return rows.sort((a, b) => {
      const x = key(a);
      const y = key(b);
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return sign * (kind === 'num' ? x - y : String(x).localeCompare(String(y)));
    });
  }

  function tierSummary() {
    const groups = new Map();
    for (const r of data.rows) {
      const key = r.tier_gb;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(r);
    }
    const order = [...data.tiers_gb, null].filter((tier) => groups.has(tier));
    clear(tiers, h('h3', {}, t('hw.tiersHead')), h('div', { class: 'tiergrid' }, order.map((tier) => {
      const rows = groups.get(tier);
      const fit = rows.filter((r) => r.fits);
      const best = fit.reduce((a, r) => (!a || r.estimate_tok_s > a.estimate_tok_s ? r : a), null);
      return h('button', {
        type: 'button', class: `tier${String(tier) === tierSel.value ? ' on' : ''}`, 'data-tier': String(tier),
        onclick: () => { tierSel.value = tierSel.value === String(tier) ? '' : String(tier); draw(); },
      },
      h('b', {}, tierLabel(tier)),
      h('span', {}, t('hw.tierCount', { n: rows.length, fit: fit.length })),
      h('span', { class: 'best' }, best ? t('hw.tierBest', { name: best.hardware.name, tok: num(best.estimate_tok_s) }) : t('hw.tierNone')));
    })));
  }

  function draw() {
    save();
    tierSummary();
    const rows = visible();
    const max = Math.max(1e-9, ...rows.map((r) => r.estimate_tok_s || 0));
    const head = h('tr', {}, COLUMNS.map(([name, , kind]) => h('th', {
      scope: 'col', class: `${kind} col-${name}`, 'aria-sort': state.sort === name ? (state.dir === 'asc' ? 'ascending' : 'descending') : null,
    }, h('button', {
      type: 'button', 'data-sort': name,
      onclick: () => {
        state.dir = state.sort === name && state.dir === 'desc' ? 'asc' : (state.sort === name ? 'desc' : (kind === 'num' ? 'desc' : 'asc'));
        state.sort = name;
        draw();
      },
    }, t(`hw.col.${name}`), state.sort === name ? (state.dir === 'asc' ? ' ▲' : ' ▼') : ''))));
    const shown = showAll ? rows : rows.slice(0, FIRST_ROWS[narrow() ? 'phone' : 'wide']);
    const body = shown.map((r) => {
      const hw = r.hardware;
      const bar = h('span', { class: 'bar' });
      bar.style.width = `${(((r.estimate_tok_s || 0) / max) * 100).toFixed(1)}%`;
      return h('tr', { 'data-id': hw.id, class: r.fits === false ? 'nofit' : '' },
        h('td', { class: 'text device col-name' }, h('span', { class: 'name' }, hw.name), h('small', {}, hw.id)),
        h('td', { class: 'text col-vendor' }, hw.vendor),
        h('td', { class: 'text col-segment' }, t(`seg.${hw.segment}`)),
        h('td', { class: 'num col-memory' }, num(hw.memory_gb)),
        h('td', { class: 'num col-bandwidth' }, num(hw.memory_bandwidth_gb_per_s)),
        h('td', { class: 'num col-tflops' }, num(hw.fp16_tflops)),
        h('td', { class: 'num col-year' }, hw.launch_year ?? '–'),
        h('td', { class: 'num col-ceiling' }, num(r.ceiling_tok_s)),
        h('td', { class: 'num est col-estimate', 'data-value': r.estimate_tok_s ?? '' }, h('span', { class: 'barcell' }, bar, h('span', {}, num(r.estimate_tok_s)))),
        h('td', { class: 'num col-fits' }, r.error ? h('span', { title: message(r.error) }, '⚠') : (r.fits ? h('span', { class: 'yes', title: t('r.fits.yes') }, '✓') : h('span', { class: 'no', title: t('r.fits.no') }, '✗'))),
        h('td', { class: 'text src col-source' }, sourceCell(hw.source)));
    });
    clear(out,
      h('p', { class: 'count', 'data-testid': 'count' }, t('hw.count', { shown: rows.length, total: data.rows.length, model: data.model?.name || '' })),
      h('div', { class: 'tablewrap' }, h('table', { class: 'data priority', 'data-testid': 'hardware-table' }, h('thead', {}, head), h('tbody', {}, body))),
      shown.length < rows.length
        ? h('button', { type: 'button', class: 'more-rows', 'data-testid': 'show-all', onclick: () => { showAll = true; draw(); } }, t('hw.showAll', { n: rows.length }))
        : null,
      h('p', { class: 'note' }, t('p.hardware.note')));
  }

  async function load() {
    let bad = 0;
    const body = {};
    for (const name of SETUP_FIELDS) {
      const raw = form.elements[name].value;
      const message = validate(name, raw);
      markField(form, name, message);
      if (message) bad += 1;
      const value = toApi(name, raw);
      if (value !== undefined) body[name] = value;
    }
    save();
    if (bad) return;
    try {
      data = await post('/api/panorama', body);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.field) markField(form, error.field, message(error.message));
      clear(out, errorBox(error));
      return;
    }
    const hw = data.rows.map((r) => r.hardware);
    options(vendor, t('hw.allVendors'), [...new Set(hw.map((x) => x.vendor))].sort(), vendor.value || state.vendor || '');
    options(segment, t('hw.allSegments'), [...new Set(hw.map((x) => x.segment))].sort(), segment.value || state.segment || '', (v) => t(`seg.${v}`));
    const tiersHeld = [...data.tiers_gb, null].filter((tier) => data.rows.some((r) => r.tier_gb === tier));
    options(tierSel, t('hw.allTiers'), tiersHeld.map(String), tierSel.value || state.tier || '', (v) => tierLabel(v === 'null' ? null : Number(v)));
    draw();
    out.dataset.ready = 'true';
  }

  form.addEventListener('input', (event) => {
    if (!FIELDS[event.target.name] || event.target.tagName === 'SELECT') return; // selects act on 'change'
    markField(form, event.target.name, validate(event.target.name, event.target.value));
    rememberSetup({ [event.target.name]: event.target.value });
    clearTimeout(timer);
    timer = setTimeout(load, 300);
  });
  form.addEventListener('change', (event) => {
    if (event.target.tagName !== 'SELECT') return;
    rememberSetup({ [event.target.name]: event.target.value });
    load();
  });
  form.addEventListener('submit', (event) => { event.preventDefault(); load(); });
  for (const el of [search, vendor, segment, tierSel, fitsOnly]) el.addEventListener(el === search ? 'input' : 'change', () => data && draw());

  clear(root, form, filters, tiers, out, await datalists());
  await load();
}
