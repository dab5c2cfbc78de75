// Speed feel: the same answer streamed side by side at several token rates (seed 002).
// Each lane shows floor(elapsed x rate) tokens, so its speed is exact whatever the frame rate;
// render times are kept per lane so the page can measure what it actually showed.
import { ApiError, meta, post } from '../api.js';
import { frame } from '../chart.js';
import { clear, h, s } from '../dom.js';
import { num, plain } from '../format.js';
import { lang, t } from '../i18n.js';
import { readState, writeState } from '../url.js';
import { errorBox, verdict } from '../widgets.js';

const DEFAULT_RATES = '2,5,10,30,100';
const MAX_TEXT_IN_URL = 1500;

/** A log scale of tok/s with the broken-stream floor and the reading-speed band, and a mark per lane. */
function speedScale(rates, info) {
  const W = frame(1000, 64).W; // as wide as its box on a phone, so the 11-unit text stays 11 px
  const H = 64;
  const min = 1;
  const max = Math.max(200, ...rates) * 1.2;
  const x = (v) => 16 + (Math.log10(v / min) / Math.log10(max / min)) * (W - 32);
  const [readLow, readHigh] = info.reading_speed_tok_s;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'scale', role: 'img', 'aria-label': t('feel.scaleAria') },
    s('rect', { x: x(min), y: 18, width: x(info.broken_stream_tok_s) - x(min), height: 14, class: 'z-broken' }),
    s('rect', { x: x(readLow), y: 18, width: x(readHigh) - x(readLow), height: 14, class: 'z-reading' }),
    s('line', { x1: x(min), x2: x(max), y1: 32, y2: 32, class: 'axis' }),
    s('text', { x: x(Math.sqrt(min * info.broken_stream_tok_s)), y: 13, 'text-anchor': 'middle', class: 'zl' }, t('feel.zoneBroken')),
    s('text', { x: x(Math.sqrt(readLow * readHigh)), y: 13, 'text-anchor': 'middle', class: 'zl' }, t('feel.zoneReading')));
  const marks = W < 600 ? [1, 3, 10, 30, 100, 300, 1000] : [1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000];
  for (const v of marks.filter((v) => v <= max)) {
    svg.append(s('line', { x1: x(v), x2: x(v), y1: 32, y2: 36, class: 'axis' }), s('text', { x: x(v), y: 48, 'text-anchor': 'middle', class: 'tick' }, String(v)));
  }
  for (const rate of rates) svg.append(s('path', { d: `M${x(rate)},34 l-5,-9 h10 z`, class: 'mark' }));
  svg.append(s('text', { x: W - 16, y: 62, 'text-anchor': 'end', class: 'tick' }, t('unit.tok_s')));
  return svg;
}

export async function mount(root) {
  const state = readState();
  const info = await meta();
  const ratesInput = h('input', { id: 'f-rates', name: 'rates', value: state.rates || DEFAULT_RATES, autocomplete: 'off', 'aria-describedby': 'f-rates-msg', 'data-testid': 'rates' });
  const textArea = h('textarea', { id: 'f-text', name: 'text', rows: 4, placeholder: t('feel.textPlaceholder'), 'data-testid': 'text' }, state.text || '');
  const msg = h('p', { class: 'msg', id: 'f-rates-msg', 'aria-live': 'polite' });
  const playBtn = h('button', { type: 'button', class: 'primary', 'data-testid': 'play' }, t('feel.pause'));
  const restartBtn = h('button', { type: 'button', 'data-testid': 'restart' }, t('feel.restart'));
  const form = h('form', { class: 'inputs wide', novalidate: true },
    h('div', { class: 'grid two' },
      h('div', { class: 'field', 'data-field': 'rates' }, h('label', { for: 'f-rates' }, t('feel.rates'), h('span', { class: 'u' }, ` (${t('unit.tok_s')})`)), ratesInput, h('p', { class: 'help' }, t('feel.ratesHelp')), msg),
      h('div', { class: 'field' }, h('label', { for: 'f-text' }, t('feel.text')), textArea, h('p', { class: 'help' }, t('feel.textHelp')))),
    h('div', { class: 'actions' }, h('button', { type: 'submit', 'data-testid': 'apply' }, t('feel.apply')), playBtn, restartBtn));
  const scaleBox = h('div', { class: 'scalebox' });
  const lanesBox = h('div', { class: 'lanes', 'data-testid': 'lanes' });
  clear(root, form, scaleBox, lanesBox, h('p', { class: 'note' }, t('p.feel.note')));

  let lanes = [];
  let frame = null;
  let started = 0;
  let pausedAt = null;

  function parseRates() {
    const parts = ratesInput.value.split(',').map((x) => x.trim()).filter(Boolean);
    const rates = parts.map((x) => Number(x.replace(/\s/g, '')));
    if (!rates.length) return [null, t('err.required')];
    if (rates.some((r) => !Number.isFinite(r) || r <= 0)) return [null, t('feel.badRates')];
    if (rates.length > 8) return [null, t('feel.tooMany')];
    return [rates, null];
  }

  function tick(now) {
    const elapsed = ((pausedAt ?? now) - started) / 1000;
    let running = false;
    for (const lane of lanes) {
      const target = Math.min(lane.tokens.length, Math.floor(elapsed * lane.rate + 1e-9));
      if (target > lane.rendered) {
        lane.text.append(document.createTextNode(lane.tokens.slice(lane.rendered, target).join('')));
        for (let k = lane.rendered; k < target; k += 1) lane.times.push(now);
        lane.rendered = target;
        lane.el.dataset.rendered = String(target);
        lane.body.scrollTop = lane.body.scrollHeight;
      }
      if (lane.rendered < lane.tokens.length) running = true;
      else if (!lane.done) {
        lane.done = true;
        lane.el.classList.add('done');
      }
      if (now - lane.shownAt > 200 || lane.done) {
        lane.shownAt = now;
        const n = lane.times.length;
        const measured = n > 1 ? ((n - 1) * 1000) / (lane.times[n - 1] - lane.times[0] || 1) : null;
        lane.stat.textContent = t('feel.stat', { n: lane.rendered, total: lane.tokens.length, measured: measured ? num(measured) : '–' });
        lane.el.dataset.measured = measured ?? '';
      }
    }
    frame = running && pausedAt === null ? requestAnimationFrame(tick) : null;
    if (!running) playBtn.textContent = t('feel.replay');
  }

  function start() {
    for (const lane of lanes) {
      lane.rendered = 0;
      lane.times = [];
      lane.done = false;
      lane.shownAt = 0;
      lane.el.classList.remove('done');
      clear(lane.text);
    }
    pausedAt = null;
    started = performance.now();
    playBtn.textContent = t('feel.pause');
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(tick);
  }

  function togglePause() {
    const now = performance.now();
    if (lanes.every((lane) => lane.done)) { start(); return; }
    if (pausedAt === null) {
      pausedAt = now;
      cancelAnimationFrame(frame);
      playBtn.textContent = t('feel.play');
    } else {
      started += now - pausedAt;
      pausedAt = null;
      playBtn.textContent = t('feel.pause');
      frame = requestAnimationFrame(tick);
    }
  }

  async function load() {
    const [rates, error] = parseRates();
    ratesInput.setAttribute('aria-invalid', error ? 'true' : 'false');
    ratesInput.closest('.field').classList.toggle('invalid', Boolean(error));
    msg.textContent = error || '';
    const custom = textArea.value.trim();
    writeState({ rates: ratesInput.value.replace(/\s/g, ''), text: custom.length <= MAX_TEXT_IN_URL ? custom : '' }, lang());
    if (error) return;
    let plan;
    try {
      plan = await post('/api/feel', { rates, lang: lang(), ...(custom ? { text: custom } : {}) });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      clear(lanesBox, errorBox(err));
      return;
    }
    clear(scaleBox, speedScale(rates, info));
    lanes = plan.lanes.map((lane) => {
      const text = h('span', { class: 'text' });
      const body = h('div', { class: 'body' }, text, h('span', { class: 'caret', 'aria-hidden': 'true' }));
      const stat = h('p', { class: 'stat' });
      const el = h('section', { class: `lane l-${lane.verdict_code}`, 'data-rate': lane.rate_tok_s, 'data-rendered': '0', 'data-testid': 'lane' },
        h('header', { title: lane.verdict }, h('b', {}, `${plain(lane.rate_tok_s)} ${t('unit.tok_s')}`), verdict(lane.verdict_code)),
        body,
        h('footer', {}, stat, h('p', { class: 'muted' }, t('feel.finish', { s: num(lane.finish_s) }))));
      return { rate: lane.rate_tok_s, tokens: plan.tokens, el, body, text, stat, rendered: 0, times: [], done: false, shownAt: 0 };
    });
    lanesBox.style.setProperty('--lanes', String(Math.min(lanes.length, 5)));
    clear(lanesBox, lanes.map((lane) => lane.el));
    start();
  }

  form.addEventListener('submit', (event) => { event.preventDefault(); load(); });
  ratesInput.addEventListener('change', load);
  playBtn.addEventListener('click', togglePause);
  restartBtn.addEventListener('click', start);

  // For measurements (the browser tests, the benchmark): what each lane rendered, and when.
  window.tokometerFeel = {
    lanes: () => lanes.map((lane) => ({ rate: lane.rate, rendered: lane.rendered, total: lane.tokens.length, times: lane.times.slice() })),
  };
  await load();
  return { stop: () => cancelAnimationFrame(frame) };
}
