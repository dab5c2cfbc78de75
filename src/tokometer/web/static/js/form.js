// Form fields, client-side validation and the calculator scaffold shared by the calculator pages.
import { ApiError, catalog } from './api.js';
import { clear, h } from './dom.js';
import { plain } from './format.js';
import { lang, locale, message, t } from './i18n.js';
import { readState, writeState } from './url.js';
import { errorBox } from './widgets.js';

/** Every input a page may show, named as the API names it. */
export const FIELDS = {
  model: { type: 'text', list: 'models', required: true },
  quant: { type: 'select', source: 'weights', empty: 'opt.defaultRule' },
  hw: { type: 'text', list: 'hardware', required: true },
  engine: { type: 'select', source: 'engines', empty: 'opt.auto' },
  kv_dtype: { type: 'select', source: 'kv', empty: 'opt.engineDefault' },
  params_b: { type: 'number', check: 'positive', required: true, unit: 'billions' },
  active_params_b: { type: 'number', check: 'positive', unit: 'billions' },
  bits: { type: 'number', check: 'positive', max: 64, required: true, unit: 'bits', list: 'bits' },
  bandwidth_gb_per_s: { type: 'number', check: 'positive', required: true, unit: 'gbps' },
  memory_gb: { type: 'number', check: 'positive', unit: 'gb' },
  tflops: { type: 'number', check: 'positive', unit: 'tflops' },
  prompt_tokens: { type: 'int', check: 'nonneg', unit: 'tokens' },
  output_tokens: { type: 'int', check: 'positive', unit: 'tokens' },
  context_tokens: { type: 'int', check: 'nonneg', unit: 'tokens' },
  batch: { type: 'int', check: 'positive' },
  sessions: { type: 'int', check: 'positive' },
  ttft_ms: { type: 'number', check: 'nonneg', required: true, unit: 'ms' },
  tok_s: { type: 'number', check: 'positive', required: true, unit: 'tok_s' },
  measured_decode_tok_s: { type: 'number', check: 'positive', required: true, unit: 'tok_s' },
  measured_prefill_tok_s: { type: 'number', check: 'positive', unit: 'tok_s' },
  // the levers (`tokometer estimate --tp/--pp/--link, --gpu-layers/--offload-experts/--cpu-hw, --draft/--acceptance/--draft-tokens`)
  tp: { type: 'int', check: 'positive', placeholder: '1' },
  link: { type: 'text', list: 'links' },
  pp: { type: 'int', check: 'positive', placeholder: '1' },
  gpu_layers: { type: 'layers' },
  offload_experts: { type: 'text', placeholder: 'all' },
  cpu_hw: { type: 'select', source: 'cpu', empty: 'opt.cpuDefault' },
  draft: { type: 'text', list: 'models' },
  acceptance: { type: 'number', check: 'nonneg', below: 1, placeholder: '0.7' },
  draft_tokens: { type: 'int', check: 'positive', max: 64, placeholder: '4' },
  // the Serving page (`tokometer simulate` / `plan`)
  serving_engine: { type: 'select', source: 'serving', empty: 'opt.vllm' },
  replicas: { type: 'int', check: 'positive', max: 64, placeholder: '1' },
  rate_per_s: { type: 'number', check: 'positive', unit: 'req_s' },
  slo_ttft_ms: { type: 'number', check: 'positive', unit: 'ms' },
  slo_tpot_ms: { type: 'number', check: 'positive', unit: 'ms' },
  // the Serving page's speculative decoding and shared prefixes (`tokometer simulate --spec-method ... --system-prompt ...`)
  spec_method: { type: 'select', source: 'spec', empty: 'opt.noSpec' },
  spec_tokens: { type: 'int', check: 'positive', max: 16 },
  spec_acceptance: { type: 'number', check: 'nonneg', max: 1 },
  draft_model: { type: 'text', list: 'models' },
  system_prompt: { type: 'int', check: 'nonneg', max: 1000000, unit: 'tokens' },
  system_prompt_share: { type: 'number', check: 'nonneg', max: 1, placeholder: '1' },
  system_prompts: { type: 'int', check: 'positive', max: 1000, placeholder: '1' },
  turns: { type: 'int', check: 'positive', max: 64, placeholder: '1' },
};

export const SETUP = {
  catalog: ['model', 'quant', 'hw'],
  numbers: ['params_b', 'bits', 'bandwidth_gb_per_s'],
};
export const SETUP_MORE = {
  catalog: ['engine', 'kv_dtype'],
  numbers: ['memory_gb', 'tflops', 'active_params_b', 'engine'],
};
export const SETUP_DEFAULTS = {
  model: 'llama-3.1-8b', quant: '', hw: 'rtx-4090', // no quant: the server's one default precision rule picks
  params_b: '70', bits: '16', bandwidth_gb_per_s: '3350',
};
/** The advanced section: [group title key, fields], collapsed unless one of them is set. */
export const ADVANCED = [
  ['g.parallel', ['tp', 'link', 'pp']],
  ['g.offload', ['gpu_layers', 'offload_experts', 'cpu_hw']],
  ['g.speculative', ['draft', 'acceptance', 'draft_tokens']],
];
const LINKS = ['nvlink', 'pcie5', 'pcie4', 'pcie4x8', 'pcie3'];
const SERVING_ENGINES = ['sglang', 'tensorrt-llm', 'lmdeploy', 'llama-cpp', 'static']; // vllm is the empty choice
const SPEC_METHODS = ['eagle3', 'mtp', 'draft', 'ngram']; // the scheduler's (`costmodel.serving.speculation.METHODS`)
const BITS = ['32', '16', '8.5', '8', '6.5625', '5.5', '4.9', '4.5', '4.25', '4', '3.4375', '2.625'];

/** The setup a user picked travels from page to page (a model chosen on Memory stays on Throughput). */
const SHARED = ['model', 'quant', 'hw', 'engine', 'kv_dtype', 'params_b', 'active_params_b', 'bits', 'bandwidth_gb_per_s', 'memory_gb', 'tflops', 'context_tokens'];
const SHARED_KEY = 'tokometer.setup';

export function sharedSetup() {
  try { return JSON.parse(localStorage.getItem(SHARED_KEY) || '{}') || {}; } catch { return {}; }
}

/** Remember what the user set (called on their edits, not on page load, so defaults never travel). */
export function rememberSetup(values, mode = null) {
  const kept = { ...sharedSetup() };
  for (const name of SHARED) if (values[name] !== undefined) kept[name] = values[name];
  if (mode) kept.mode = mode;
  try { localStorage.setItem(SHARED_KEY, JSON.stringify(kept)); } catch { /* storage may be disabled */ }
}

/** A page's starting values: a shared link wins whole; otherwise the remembered setup under the URL's other values. */
export function startState() {
  const url = readState();
  return SHARED.some((name) => name in url) ? url : { ...sharedSetup(), ...url };
}

/** The message for a bad value, or null. `raw` is the input's text. */
export function validate(name, raw) {
  const spec = FIELDS[name];
  const value = (raw ?? '').trim();
  if (!value) return spec.required ? t('err.required') : null;
  if (spec.type === 'text' || spec.type === 'select') return null;
  const n = Number(value.replace(',', '.'));
  if (!Number.isFinite(n)) return t('err.number');
  if (spec.type === 'layers') { // a count (26) or, with a decimal point, a share (0.8)
    if (n < 0) return t('err.nonneg');
    if (/[.,eE]/.test(value)) return n > 1 ? t('err.share') : null;
    return Number.isInteger(n) ? null : t('err.integer');
  }
  if (spec.type === 'int' && !Number.isInteger(n)) return t('err.integer');
  if (spec.check === 'positive' && !(n > 0)) return t('err.positive');
  if (spec.check === 'nonneg' && !(n >= 0)) return t('err.nonneg');
  if (spec.max !== undefined && n > spec.max) return t('err.max', { max: spec.max });
  if (spec.below !== undefined && n >= spec.below) return t('err.below', { max: spec.below });
  return null;
}

/**
 * The value to send: numbers as numbers (a French decimal comma accepted), names as strings.
 * GPU layers stay a string, so "26" is a count and "0.8" a share, as on the command line.
 */
export function toApi(name, raw) {
  const value = (raw ?? '').trim();
  if (!value) return undefined;
  const spec = FIELDS[name];
  if (spec.type === 'layers') return value.replace(',', '.');
  return spec.type === 'number' || spec.type === 'int' ? Number(value.replace(',', '.')) : value;
}

async function options(source) {
  if (source === 'engines') return (await catalog('engines')).map((e) => [e.id, e.name]);
  if (source === 'serving') return SERVING_ENGINES.map((id) => [id, t(`engine.${id}`)]);
  if (source === 'spec') return SPEC_METHODS.map((id) => [id, t(`spec.${id}`)]);
  if (source === 'cpu') {
    return (await catalog('hardware')).filter((x) => x.kind === 'cpu')
      .sort((a, b) => a.memory_bandwidth_gb_per_s - b.memory_bandwidth_gb_per_s)
      .map((x) => [x.id, `${plain(x.memory_bandwidth_gb_per_s)} ${t('unit.gbps')} · ${cpuLabel(x.name)}`]);
  }
  const quants = await catalog('quants');
  const usage = source === 'kv' ? ['kv', 'both'] : ['weights', 'both'];
  const bits = new Intl.NumberFormat(locale(), { maximumFractionDigits: 5 });
  return quants.filter((q) => usage.includes(q.usage)).map((q) => [q.id, `${q.name} (${bits.format(q.bits_per_weight)} b)`]);
}

/**
 * A CPU memory entry in the page's language: the generic tiers ("Dual-channel DDR5-5600 desktop",
 * "12-channel DDR5-6000 server") and named parts ("AMD EPYC 9655 (96-core Zen 5), 12-channel DDR5-5600"),
 * whose channel count and memory are translated and whose parenthesised details are dropped.
 */
function cpuLabel(name) {
  const short = name.replace(/ \([^)]*\)/g, '');
  const desktop = short.match(/^Dual-channel (\S+) desktop$/);
  if (desktop) return t('opt.cpuDesktop', { memory: desktop[1] });
  const server = short.match(/^(\d+)-channel (\S+) server$/);
  if (server) return t('opt.cpuServer', { n: server[1], memory: server[2] });
  const part = short.match(/^(.+), (\d+)-channel (\S+)$/);
  return part ? `${part[1]}, ${t('opt.cpuChannels', { n: part[2], memory: part[3] })}` : short;
}

export async function datalists() {
  const [models, hardware] = await Promise.all([catalog('models'), catalog('hardware')]);
  return h('div', { hidden: true },
    h('datalist', { id: 'dl-models' }, models.map((m) => h('option', { value: m.id }, m.name))),
    h('datalist', { id: 'dl-hardware' }, hardware.map((x) => h('option', { value: x.id }, x.name))),
    h('datalist', { id: 'dl-bits' }, BITS.map((b) => h('option', { value: b }))),
    h('datalist', { id: 'dl-links' }, LINKS.map((l) => h('option', { value: l }))));
}

/** One labelled input with its help line and an (initially empty) message line. */
export async function field(name, value) {
  const spec = FIELDS[name];
  const id = `f-${name}`;
  let input;
  if (spec.type === 'select') {
    const opts = await options(spec.source);
    input = h('select', { id, name },
      h('option', { value: '' }, t(spec.empty)),
      opts.map(([v, label]) => h('option', { value: v, selected: v === value }, label)));
    if (value && !opts.some(([v]) => v === value)) input.append(h('option', { value, selected: true }, value));
  } else {
    const numeric = spec.type !== 'text';
    input = h('input', {
      id, name, value: value ?? '', type: 'text', autocomplete: 'off', spellcheck: 'false',
      inputmode: numeric ? (spec.type === 'int' ? 'numeric' : 'decimal') : null,
      list: spec.list ? `dl-${spec.list}` : null,
      placeholder: spec.placeholder ? plain(Number(spec.placeholder)) : null, // a default, in the page's locale
      'aria-describedby': `${id}-msg ${id}-help`,
    });
  }
  return h('div', { class: 'field', 'data-field': name },
    h('label', { for: id }, t(`f.${name}`), spec.unit ? h('span', { class: 'u' }, ` (${t(`unit.${spec.unit}`)})`) : null),
    input,
    h('p', { class: 'help', id: `${id}-help` }, t(`h.${name}`)),
    h('p', { class: 'msg', id: `${id}-msg`, 'aria-live': 'polite' }));
}

export function markField(form, name, message) {
  const box = form.querySelector(`[data-field="${name}"]`);
  if (!box) return false;
  box.classList.toggle('invalid', Boolean(message));
  box.querySelector('.msg').textContent = message || '';
  box.querySelector('input, select').setAttribute('aria-invalid', message ? 'true' : 'false');
  return true;
}

/** Open the collapsed section holding a field the server complained about. */
function revealField(form, name) {
  const details = form.querySelector(`[data-field="${name}"]`)?.closest('details');
  if (details && !details.open) details.open = true;
}

function modeSwitch(modes, current, onChange) {
  return h('div', { class: 'modes', role: 'radiogroup', 'aria-label': t('f.mode') },
    modes.map((mode) => h('label', { class: mode === current ? 'on' : '' },
      h('input', { type: 'radio', name: 'mode', value: mode, checked: mode === current, onchange: () => onChange(mode) }),
      t(`mode.${mode}`))));
}

/**
 * A calculator page: inputs from the URL, a form, validation, a debounced call, a rendered result.
 *
 * spec: {id, modes, fields(mode) -> {main: [...], more: [...], advanced: [[title, [...]], ...]},
 *        defaults(mode) -> {...}, call(values, mode) -> Promise<data>, render(out, data, values, mode)}
 *
 * `advanced` is a collapsed section of titled groups (see ADVANCED); it opens when one of its fields
 * is set, and `advanced=1` in the URL remembers that it was opened.
 */
export async function calculator(root, spec) {
  const state = startState();
  let mode = spec.modes.includes(state.mode) ? state.mode : spec.modes[0];
  const out = h('div', { class: 'result', 'aria-live': 'polite', 'data-testid': 'result' });
  const form = h('form', { class: 'inputs', novalidate: true, 'data-testid': 'form' });
  let timer = null;
  let sequence = 0;
  let advancedOpen = state.advanced === '1';

  function advancedNames() {
    return (spec.fields(mode).advanced || []).flatMap(([, list]) => list);
  }

  function names() {
    const f = spec.fields(mode);
    return [...f.main, ...(f.more || []), ...advancedNames()];
  }

  function values() {
    const result = {};
    for (const name of names()) result[name] = form.elements[name]?.value ?? '';
    return result;
  }

  function saveState(current = values()) {
    const open = advancedNames().length && advancedOpen ? '1' : '';
    writeState({ mode: spec.modes.length > 1 ? mode : '', ...current, advanced: open }, lang());
  }

  /** "2 set" next to the advanced summary, so a closed section never hides a setting silently. */
  function countAdvanced(current) {
    const badge = form.querySelector('[data-testid=advanced-count]');
    if (!badge) return;
    const n = advancedNames().filter((name) => (current[name] ?? '').trim()).length;
    badge.textContent = n ? t('f.advancedSet', { n }) : '';
  }

  async function advancedSection(pick) {
    const groups = spec.fields(mode).advanced || [];
    if (!groups.length) return null;
    const sets = await Promise.all(groups.map(async ([title, list]) => h('fieldset', { class: 'group' },
      h('legend', {}, t(title)),
      h('div', { class: 'grid' }, await Promise.all(list.map((name) => field(name, pick(name))))))));
    advancedOpen = advancedOpen || advancedNames().some((name) => pick(name));
    const details = h('details', { class: 'more advanced', open: advancedOpen, 'data-testid': 'advanced' },
      h('summary', {}, t('f.advanced'), ' ', h('span', { class: 'badge', 'data-testid': 'advanced-count' })),
      sets);
    details.addEventListener('toggle', () => {
      if (advancedOpen === details.open) return;
      advancedOpen = details.open;
      saveState();
    });
    return details;
  }

  async function build(initial) {
    const f = spec.fields(mode);
    const defaults = spec.defaults(mode);
    const pick = (name) => (initial[name] !== undefined ? initial[name] : (defaults[name] ?? ''));
    const main = await Promise.all(f.main.map((name) => field(name, pick(name))));
    const more = await Promise.all((f.more || []).map((name) => field(name, pick(name))));
    const moreOpen = (f.more || []).some((name) => initial[name]);
    const advanced = await advancedSection(pick);
    clear(form,
      spec.modes.length > 1 ? modeSwitch(spec.modes, mode, switchMode) : null,
      h('div', { class: 'grid' }, main),
      more.length ? h('details', { class: 'more', open: moreOpen }, h('summary', {}, t('f.more')), h('div', { class: 'grid' }, more)) : null,
      advanced,
      h('div', { class: 'actions' },
        h('button', { type: 'submit', class: 'primary', 'data-testid': 'calculate' }, t('f.calculate')),
        h('span', { class: 'status', 'data-testid': 'status' })));
  }

  async function switchMode(next) {
    const kept = values();
    mode = next;
    rememberSetup(kept, mode);
    await build(kept);
    run();
  }

  async function run() {
    clearTimeout(timer);
    const current = values();
    let bad = 0;
    for (const name of names()) {
      const message = validate(name, current[name]);
      markField(form, name, message);
      if (message) {
        bad += 1;
        revealField(form, name);
      }
    }
    saveState(current);
    countAdvanced(current);
    if (bad) {
      form.querySelector('.status').textContent = t('err.fix', { n: bad });
      out.classList.add('stale');
      return;
    }
    const body = {};
    for (const name of names()) {
      const value = toApi(name, current[name]);
      if (value !== undefined) body[name] = value;
    }
    const mine = ++sequence;
    form.querySelector('.status').textContent = '';
    try {
      const data = await spec.call(body, mode);
      if (mine !== sequence) return;
      out.classList.remove('stale');
      clear(out);
      spec.render(out, data, body, mode);
      out.dataset.ready = String(mine);
    } catch (error) {
      if (mine !== sequence) return;
      if (!(error instanceof ApiError)) throw error;
      if (error.field && markField(form, error.field, message(error.message))) revealField(form, error.field);
      const pick = error.field && form.elements[error.field]
        ? (name) => { form.elements[error.field].value = name; rememberSetup({ [error.field]: name }); run(); }
        : null;
      clear(out, errorBox(error, pick));
      out.dataset.ready = String(mine);
    }
  }

  form.addEventListener('input', (event) => {
    const name = event.target.name;
    if (!FIELDS[name] || event.target.tagName === 'SELECT') return; // selects and the mode switch act on 'change'
    markField(form, name, validate(name, event.target.value));
    rememberSetup({ [name]: event.target.value }, spec.modes.length > 1 ? mode : null);
    clearTimeout(timer);
    timer = setTimeout(run, 300);
  });
  form.addEventListener('change', (event) => {
    if (event.target.tagName !== 'SELECT') return;
    rememberSetup({ [event.target.name]: event.target.value }, spec.modes.length > 1 ? mode : null);
    run();
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    run();
  });

  await build(state);
  clear(root, h('div', { class: 'calc' }, h('div', { class: 'col-in' }, form), h('div', { class: 'col-out' }, out)));
  const [lists] = await Promise.all([datalists(), run()]);
  root.append(lists);
  return { form, out, run };
}
