// Memory: can I run it? Weights (every expert) + KV for the context and sessions + engine runtime.
import { post } from '../api.js';
import { clear, h } from '../dom.js';
import { SETUP, SETUP_DEFAULTS, SETUP_MORE, calculator } from '../form.js';
import { gbNum, int, num } from '../format.js';
import { t } from '../i18n.js';
import { ceilingPair, facts, setupLine, why } from '../widgets.js';

function stack(m) {
  const total = Math.max(m.total_gb, m.available_gb || 0, m.device_memory_gb || 0) * 1.04;
  const part = (cls, gb, label) => {
    const el = h('span', { class: `part ${cls}`, title: `${label}: ${gbNum(gb)}` });
    el.style.width = `${((gb / total) * 100).toFixed(2)}%`;
    return el;
  };
  const bar = h('div', { class: 'stack', role: 'img', 'aria-label': t('r.memAria', { need: num(m.total_gb), have: num(m.available_gb) }) },
    part('weights', m.weights_gb, t('r.memWeights')),
    part('kv', m.kv_cache_gb, t('r.memKv')),
    part('runtime', m.runtime_overhead_gb, t('r.memRuntime')));
  if (m.available_gb) {
    const line = h('span', { class: 'limit' }, h('em', {}, t('r.memUsable', { gb: num(m.available_gb) })));
    line.style.left = `${((m.available_gb / total) * 100).toFixed(2)}%`;
    bar.append(line);
  }
  return h('div', { class: 'stackwrap' }, bar, h('ul', { class: 'legend' },
    h('li', {}, h('span', { class: 'key weights' }), `${t('r.memWeights')} ${gbNum(m.weights_gb)}`),
    h('li', {}, h('span', { class: 'key kv' }), `${t('r.memKv')} ${gbNum(m.kv_cache_gb)}`),
    h('li', {}, h('span', { class: 'key runtime' }), `${t('r.memRuntime')} ${gbNum(m.runtime_overhead_gb)}`)));
}

export function mount(root) {
  return calculator(root, {
    modes: ['catalog', 'numbers'],
    fields: (mode) => ({
      main: [...SETUP[mode], ...(mode === 'numbers' ? ['memory_gb'] : []), 'context_tokens', 'sessions'],
      more: SETUP_MORE[mode].filter((f) => f !== 'memory_gb'),
    }),
    defaults: () => ({ ...SETUP_DEFAULTS, memory_gb: '80', context_tokens: '8192', sessions: '1' }),
    call: (body) => post('/api/estimate', body),
    render(out, data) {
      const m = data.memory;
      const known = m.device_memory_gb !== null;
      const fits = !known ? 'unknown' : (m.fits ? 'yes' : 'no');
      clear(out, 
        setupLine(data),
        h('div', { class: `fit fit-${fits}`, 'data-testid': 'fits', 'data-fits': fits },
          h('strong', {}, t(`r.fits.${fits}`)),
          ' ',
          known ? t('r.fitsDetail', { need: num(m.total_gb), have: num(m.available_gb), device: num(m.device_memory_gb) }) : t('r.fitsUnknown', { need: num(m.total_gb) })),
        known ? stack(m) : null,
        facts([
          [t('r.maxContext'), m.max_context_tokens !== null ? `${int(m.max_context_tokens)} ${t('unit.tokens')}` : '–', 'max-context'],
          [t('r.maxSessions', { ctx: int(m.context_tokens) }), m.max_sessions !== null ? int(m.max_sessions) : '–', 'max-sessions'],
          [t('r.kvPerToken'), `${num(data.kv_cache.bytes_per_token / 1e3)} ${t('unit.kb')} (${data.kv_cache.dtype})`],
        ]),
        h('h3', { class: 'sec' }, t('r.speedAt', { ctx: int(data.decode.depth_tokens) })),
        ceilingPair(data.decode),
        h('p', { class: 'note' }, t('p.memory.note')),
        why(data));
    },
  });
}
