// Throughput: the seed calculator. Parameters x precision -> weight bytes; bandwidth / bytes -> ceiling.
import { post } from '../api.js';
import { clear, h } from '../dom.js';
import { SETUP, SETUP_DEFAULTS, SETUP_MORE, calculator } from '../form.js';
import { num, pct } from '../format.js';
import { t } from '../i18n.js';
import { bandBar, ceilingPair, facts, setupLine, why } from '../widgets.js';

export function formula(data) {
  const bw = data.hardware.memory_bandwidth_gb_per_s;
  const gb = data.decode.weight_bytes_per_token / 1e9;
  return h('p', { class: 'formula', 'data-testid': 'formula' },
    h('var', {}, 'v'), ' = ', h('var', {}, 'BW'), ' ÷ ', h('var', {}, 'M'), ' = ',
    `${num(bw)} GB/s ÷ ${num(gb)} GB = `, h('b', {}, `${num(data.decode.ceiling_tok_s)} ${t('unit.tok_s')}`));
}

export function mount(root) {
  return calculator(root, {
    modes: ['numbers', 'catalog'],
    fields: (mode) => ({ main: SETUP[mode], more: [...SETUP_MORE[mode], 'context_tokens'] }),
    defaults: () => SETUP_DEFAULTS,
    call: (body) => post('/api/estimate', body),
    render(out, data) {
      const d = data.decode;
      clear(out, 
        setupLine(data),
        ceilingPair(d),
        bandBar(d),
        formula(data),
        facts([
          [t('r.weights'), `${num(data.model.weight_bytes / 1e9)} GB (${num(data.model.bits_per_weight)} ${t('unit.bitsPerWeight')})`],
          [t('r.bytesPerToken'), `${num(d.bytes_per_token / 1e9)} GB`],
          [t('r.bound'), t(`bound.${d.bound}`)],
          [t('r.realisedLabel'), pct(d.realised_fraction)],
          [t('r.stepTime'), `${num(d.step_time_s * 1e3)} ms`],
        ]),
        h('p', { class: 'note' }, t('p.throughput.note')),
        why(data));
    },
  });
}
