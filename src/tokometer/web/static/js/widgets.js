// Result building blocks shared by the pages: the ceiling/estimate pair, band bar, verdicts, notes.
import { h } from './dom.js';
import { gbNum, gbps, num, pct, tokS } from './format.js';
import { message, t } from './i18n.js';

/** A big figure with its raw value in data-value (tests compare it with the CLI's JSON). */
export function figure(testid, value, unit, extra = {}) {
  return h('div', { class: 'figure' },
    h('span', { class: 'value', 'data-testid': testid, 'data-value': value ?? '', ...extra }, num(value)),
    unit ? h('span', { class: 'unit' }, unit) : null);
}

/** An 80 % band in the estimate's words (`r.band`), its ends scaled (a batch's factor, or s to ms: 1e3). */
export function bandText(band, scale = 1) {
  return t('r.band', { low: num(band.low * scale), high: num(band.high * scale), coverage: pct(band.coverage) });
}

/**
 * Ceiling and estimate side by side, never one without the other.
 * `decode` is the estimate's decode block; `aggregate` shows the batch totals instead of per stream.
 */
export function ceilingPair(decode, { aggregate = false, prefix = '', ifFit = false } = {}) {
  const batch = decode.batch || 1;
  const factor = aggregate ? batch : 1;
  const ceiling = aggregate ? decode.aggregate_ceiling_tok_s : decode.ceiling_tok_s;
  const estimate = aggregate ? decode.aggregate_tok_s : decode.estimate_tok_s;
  const band = decode.interval_tok_s;
  return h('div', { class: 'pair' },
    h('section', { class: 'card ceiling' },
      h('h3', {}, t(aggregate ? 'r.ceilingAggregate' : 'r.ceiling'), ifFit ? h('span', { class: 'iffit', 'data-testid': `${prefix}ceiling-if-fit` }, ` ${t('r.ifItFit')}`) : null),
      figure(`${prefix}ceiling`, ceiling, t('unit.tok_s')),
      h('p', { class: 'sub' }, t('r.ceilingSub'))),
    h('section', { class: 'card estimate' },
      h('h3', {}, t(aggregate ? 'r.estimateAggregate' : 'r.estimate'), ifFit ? h('span', { class: 'iffit' }, ` ${t('r.ifItFit')}`) : null),
      figure(`${prefix}estimate`, estimate, t('unit.tok_s')),
      h('p', { class: 'sub' },
        bandText(band, factor),
        ' · ',
        t('r.realised', { pct: pct(decode.realised_fraction) }))));
}

/** A horizontal scale from 0 to past the ceiling: the 80 % band, the estimate, the ceiling. */
export function bandBar(decode) {
  const top = decode.ceiling_tok_s * 1.08;
  const at = (v) => `${Math.max(0, Math.min(100, (v / top) * 100)).toFixed(2)}%`;
  const band = decode.interval_tok_s;
  const bar = h('div', { class: 'bandbar', role: 'img', 'aria-label': t('r.bandAria', { low: num(band.low), high: num(band.high), ceiling: num(decode.ceiling_tok_s) }) });
  const shade = h('span', { class: 'band' });
  shade.style.left = at(band.low);
  shade.style.width = `calc(${at(band.high)} - ${at(band.low)})`;
  const est = h('span', { class: 'mark est' }, h('em', {}, num(decode.estimate_tok_s)));
  est.style.left = at(decode.estimate_tok_s);
  const ceil = h('span', { class: 'mark ceil' }, h('em', {}, t('r.ceilingShort')));
  ceil.style.left = at(decode.ceiling_tok_s);
  bar.append(shade, est, ceil);
  return h('div', { class: 'bandwrap' }, bar,
    h('div', { class: 'axis' }, h('span', {}, '0'), h('span', {}, tokS(decode.ceiling_tok_s))));
}

export function verdict(code) {
  return h('span', { class: `verdict v-${code}`, 'data-testid': 'verdict', 'data-code': code }, t(`verdict.${code}`));
}

/** A two-column list of label/value rows. */
export function facts(rows) {
  return h('dl', { class: 'facts' }, rows.filter(Boolean).map(([label, value, testid]) => [
    h('dt', {}, label),
    h('dd', testid ? { 'data-testid': testid } : {}, value),
  ]));
}

/** Text with `code` spans: the backticks become <code> elements, never literal characters. */
export function rich(text) {
  return String(text ?? '').split(/`([^`]+)`/).map((part, i) => (i % 2 ? h('code', {}, part) : part)).filter((part) => part !== '');
}

/** The estimate's own "why" lines and warnings, written in English by the library, shown in the page's language. */
export function why(data) {
  const lines = data.explanation || [];
  // the "does not fit" card already says it (`fitVerdict`): once, as the CLI does
  const carded = data.fit && !data.fit.fits && data.fit.headline;
  const warnings = (data.warnings || []).filter((w) => !(carded && w.startsWith('does not fit:')));
  if (!lines.length && !warnings.length) return null;
  return h('section', { class: 'why' },
    h('h3', {}, t('r.why')),
    h('ul', {}, lines.map((line) => h('li', {}, rich(message(line))))),
    warnings.length ? h('ul', { class: 'warnings' }, warnings.map((w) => h('li', {}, rich(message(w))))) : null);
}

/** An API error; its "did you mean" names become buttons when `pick(name)` can use them. */
export function errorBox(error, pick = null) {
  const suggestions = error.suggestions || [];
  const item = (name) => (pick
    ? h('button', { type: 'button', class: 'suggest', 'data-suggest': name, onclick: () => pick(name) }, name)
    : h('code', {}, name));
  return h('div', { class: 'error', role: 'alert', 'data-testid': 'error' },
    h('strong', {}, t('err.title')), ' ', rich(message(error.message)),
    suggestions.length ? h('p', {}, `${t('err.didYouMean')} `, suggestions.map((name, i) => [i ? ' ' : '', item(name)])) : null);
}

export function setupLine(data) {
  const m = data.model;
  const hw = data.hardware;
  const devices = data.parallel?.devices > 1 ? `${data.parallel.devices} × ` : '';
  return h('p', { class: 'setup' },
    h('b', {}, m.name), ` · ${num(m.bits_per_weight)} ${t('unit.bitsPerWeight')} · ${gbNum(m.weight_bytes / 1e9)} · `,
    h('b', {}, devices + message(hw.name)), ` (${gbps(hw.memory_bandwidth_gb_per_s)}) · ${data.engine.name}`);
}

/**
 * A setup that does not fit: the verdict first, then the nearest setups that do (the JSON's `fit`
 * section), each worded here from its fields so that it reads in the page's language.
 */
export function fitVerdict(data) {
  const f = data.fit;
  if (!f || f.fits || !f.headline) return null;
  const m = data.memory;
  const speed = (r) => t('r.remedySpeed', { tok: num(r.estimate_tok_s), need: num(r.memory_gb), have: num(r.available_gb) });
  const line = (r) => {
    if (r.kind === 'quant') return t('r.remedyQuant', { quant: r.quant_name, gb: num(r.weights_gb), speed: speed(r) });
    if (r.kind === 'offload') return t('r.remedyOffload', { gpu: r.gpu_layers, n: r.n_layers, cpu: r.cpu_hw, speed: speed(r) });
    return t(r.pp > 1 ? 'r.remedyLayers' : 'r.remedyTp', { n: r.devices, hw: data.hardware.name, speed: speed(r) });
  };
  return h('section', { class: 'card nofit', role: 'alert', 'data-testid': 'nofit' },
    h('h2', { class: 'nofit-head' }, t('r.nofitHead', { need: num(m.total_gb), have: num(m.available_gb) })),
    f.remedies.length
      ? [h('p', {}, t('r.nofitNearest')),
        h('ul', { 'data-testid': 'remedies' }, f.remedies.map((r) => h('li', { 'data-kind': r.kind, 'data-value': r.estimate_tok_s }, line(r))))]
      : h('p', {}, t('r.nofitNothing')),
    h('p', { class: 'sub' }, t('r.nofitBelow')));
}

/**
 * The format and engine the server chose when the user named neither, and why: the one default
 * precision rule (`usecases/policy.py` DEFAULT_PRECISION_RULE), worded here so that it reads in the
 * page's language. `engines` and `quants` are the catalogs; null when the user picked a format.
 */
export function precisionChoice(data, values, engines, quants) {
  if (values.quant || values.bits || values.params_b) return null;
  const engine = engines.find((e) => e.id === data.engine.id);
  const gguf = (engine?.based_on || data.engine.id) === 'llama-cpp';
  const quant = data.model.quant;
  const name = quants.find((q) => q.id === quant)?.name || quant;
  let rule = 'r.ruleFile';
  if (quant) rule = !gguf ? 'r.ruleDtype' : (quant === 'q4-k-m' ? 'r.ruleGguf' : 'r.rulePublished');
  return h('p', { class: 'note choice', 'data-testid': 'precision-choice', 'data-quant': quant ?? '', 'data-engine': data.engine.id },
    t(quant ? 'r.chosen' : 'r.chosenFile', { quant: name, engine: data.engine.name }), ' ',
    t(rule, { engine: data.engine.name }),
    values.engine ? '' : [' ', t('r.ruleEngine')]);
}
