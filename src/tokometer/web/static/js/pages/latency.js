// Latency: time to first token + output tokens at a rate, and how that feels against reading speed.
import { meta, post } from '../api.js';
import { clear, h } from '../dom.js';
import { SETUP, SETUP_DEFAULTS, SETUP_MORE, calculator } from '../form.js';
import { int, num, seconds } from '../format.js';
import { t } from '../i18n.js';
import { bandText, ceilingPair, facts, figure, setupLine, verdict, why } from '../widgets.js';

function code(tokS, info) {
  if (tokS < info.broken_stream_tok_s) return 'broken';
  if (tokS < info.reading_speed_tok_s[0]) return 'slow';
  if (tokS < info.reading_speed_tok_s[1]) return 'reading';
  return 'fast';
}

/** A timeline: the wait for the first token, then generation; reading time shaded underneath. */
function timeline(l, info) {
  const [fast, slow] = [l.output_tokens / info.reading_speed_tok_s[1], l.output_tokens / info.reading_speed_tok_s[0]];
  const total = Math.max(l.e2e_s, l.ttft_s + slow) * 1.05;
  const at = (v) => `${((v / total) * 100).toFixed(2)}%`;
  const wait = h('span', { class: 'seg wait' });
  wait.style.width = at(l.ttft_s);
  const gen = h('span', { class: 'seg gen' });
  gen.style.left = at(l.ttft_s);
  gen.style.width = at(l.e2e_s - l.ttft_s);
  const read = h('span', { class: 'seg read' });
  read.style.left = at(l.ttft_s + fast);
  read.style.width = at(slow - fast);
  return h('div', { class: 'timeline' },
    h('div', { class: 'track', role: 'img', 'aria-label': t('r.timelineAria') }, wait, gen, read),
    h('ul', { class: 'legend' },
      h('li', {}, h('span', { class: 'key wait' }), t('r.tlWait', { s: seconds(l.ttft_s) })),
      h('li', {}, h('span', { class: 'key gen' }), t('r.tlGen', { s: seconds(l.e2e_s - l.ttft_s) })),
      h('li', {}, h('span', { class: 'key read' }), t('r.tlRead', { fast: seconds(fast), slow: seconds(slow) }))));
}

/** Prefill: the estimate, its bound, its 80 % band and its ceiling (the prompt at the datasheet peak). */
function prefillText(p) {
  if (!p.tok_s) return '–';
  const parts = [`${num(p.tok_s)} ${t('unit.tok_s')}`, t(`bound.${p.bound}`)];
  if (p.interval_tok_s) parts.push(bandText(p.interval_tok_s));
  if (p.ceiling_tok_s) parts.push(`${t('r.ceilingShort')} ${num(p.ceiling_tok_s)} ${t('unit.tok_s')}`);
  return parts.join(' · ');
}

function latencyBlock(l, tokS, info) {
  return [
    h('div', { class: 'trio' },
      h('section', { class: 'card' }, h('h3', {}, t('r.ttft')), figure('ttft', l.ttft_s * 1e3, t('unit.ms')),
        l.ttft_interval_s ? h('p', { class: 'sub', 'data-testid': 'ttft-band' }, bandText(l.ttft_interval_s, 1e3)) : null),
      h('section', { class: 'card' }, h('h3', {}, t('r.rate')), figure('rate', tokS, t('unit.tok_s')),
        h('p', { class: 'sub' }, t('r.tpot', { ms: num(l.tpot_s * 1e3) }))),
      h('section', { class: 'card estimate' }, h('h3', {}, t('r.e2e', { n: int(l.output_tokens) })), figure('e2e', l.e2e_s, 's'))),
    h('p', { class: 'verdict-line' }, verdict(code(tokS, info))),
    timeline(l, info),
  ];
}

export function mount(root) {
  return calculator(root, {
    modes: ['rate', 'catalog', 'numbers'],
    fields: (mode) => (mode === 'rate'
      ? { main: ['ttft_ms', 'tok_s', 'output_tokens'] }
      : { main: [...SETUP[mode], 'prompt_tokens', 'output_tokens'], more: SETUP_MORE[mode] }),
    defaults: () => ({ ...SETUP_DEFAULTS, ttft_ms: '500', tok_s: '30', output_tokens: '256', prompt_tokens: '512' }),
    async call(body, mode) {
      const [data, info] = await Promise.all([post(mode === 'rate' ? '/api/latency' : '/api/estimate', body), meta()]);
      return { data, info };
    },
    render(out, { data, info }, body, mode) {
      if (mode === 'rate') {
        clear(out, ...latencyBlock(data, data.tok_s, info), h('p', { class: 'note' }, t('p.latency.note')));
        return;
      }
      const l = data.latency;
      clear(out, 
        setupLine(data),
        ceilingPair(data.decode),
        ...latencyBlock(l, 1 / l.tpot_s, info),
        facts([
          [t('r.prefill', { n: int(data.prefill.prompt_tokens) }), prefillText(data.prefill)],
        ]),
        h('p', { class: 'note' }, t('p.latency.note')),
        why(data));
    },
  });
}
