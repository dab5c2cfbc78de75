// Utilisation: how much of the hardware a measured run used (MBU, MFU), next to the prediction.
import { post } from '../api.js';
import { clear, h } from '../dom.js';
import { SETUP, SETUP_DEFAULTS, SETUP_MORE, calculator } from '../form.js';
import { num, pct } from '../format.js';
import { message, t } from '../i18n.js';
import { ceilingPair, facts, rich, setupLine, why } from '../widgets.js';

function gauge(testid, label, fraction, sub) {
  const fill = h('span', { class: 'fill' });
  fill.style.width = `${Math.min(100, (fraction || 0) * 100).toFixed(2)}%`;
  return h('section', { class: 'card gauge' },
    h('h3', {}, label),
    h('div', { class: 'figure' }, h('span', { class: 'value', 'data-testid': testid, 'data-value': fraction ?? '' }, pct(fraction, 1))),
    h('div', { class: `meter${fraction > 1 ? ' over' : ''}` }, fill),
    h('p', { class: 'sub' }, sub));
}

export function mount(root) {
  return calculator(root, {
    modes: ['catalog', 'numbers'],
    fields: (mode) => ({
      main: [...SETUP[mode], ...(mode === 'numbers' ? ['tflops'] : []), 'measured_decode_tok_s', 'measured_prefill_tok_s'],
      more: [...SETUP_MORE[mode].filter((f) => f !== 'tflops'), 'prompt_tokens', 'batch', 'context_tokens'],
    }),
    defaults: (mode) => ({ ...SETUP_DEFAULTS, tflops: '989', measured_decode_tok_s: mode === 'numbers' ? '18' : '120' }),
    call: (body) => post('/api/utilisation', body),
    render(out, data) {
      const u = data.utilisation;
      const e = data.estimate;
      clear(out, 
        setupLine(e),
        h('div', { class: 'trio' },
          gauge('mbu', t('r.mbu'), u.mbu, t('r.mbuSub')),
          gauge('decode-mfu', t('r.decodeMfu'), u.decode_mfu, t('r.decodeMfuSub')),
          gauge('prefill-mfu', t('r.prefillMfu'), u.prefill_mfu, u.measured_prefill_tok_s ? t('r.prefillMfuSub') : t('r.prefillMissing'))),
        h('p', { class: `verdict-line util-${u.verdict_code}`, 'data-testid': 'util-verdict' }, t(`util.${u.verdict_code}`, {
          ceiling: pct(u.measured_over_ceiling), estimate: pct(u.measured_over_estimate),
        })),
        ceilingPair(e.decode),
        facts([
          [t('r.measured'), `${num(u.measured_decode_tok_s)} ${t('unit.tok_s')}`],
          [t('r.bytesPerToken'), `${num(e.decode.bytes_per_token / 1e9)} ${t('unit.gb')}`],
          [t('r.flopsPerToken'), `${num(e.decode.flops_per_token / 1e9)} GFLOP`],
          [t('r.peak'), e.hardware.peak_tflops ? `${num(e.hardware.peak_tflops)} TFLOPS ${e.hardware.peak_dtype}` : t('r.noPeak')],
        ]),
        u.notes.length ? h('ul', { class: 'warnings' }, u.notes.map((n) => h('li', {}, rich(message(n))))) : null,
        h('p', { class: 'note' }, t('p.utilisation.note')),
        why(e));
    },
  });
}
