// Batch throughput: weights are read once per step for every stream, so the aggregate climbs until compute binds.
import { post } from '../api.js';
import { clear, h } from '../dom.js';
import { SETUP, SETUP_DEFAULTS, SETUP_MORE, calculator } from '../form.js';
import { chart, legend, range } from '../chart.js';
import { gbNum, int, num } from '../format.js';
import { t } from '../i18n.js';
import { ceilingPair, facts, setupLine, why } from '../widgets.js';

export function mount(root) {
  return calculator(root, {
    modes: ['catalog', 'numbers'],
    fields: (mode) => ({ main: [...SETUP[mode], 'batch'], more: [...SETUP_MORE[mode], 'context_tokens'] }),
    defaults: () => ({ ...SETUP_DEFAULTS, batch: '8' }),
    async call(body) {
      const { batch, ...rest } = body;
      const values = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
      if (batch && !values.includes(batch)) values.push(batch);
      const [one, curve] = await Promise.all([post('/api/estimate', body), post('/api/curve', { ...rest, axis: 'batch', values })]);
      return { one, curve };
    },
    render(out, { one, curve }) {
      const d = one.decode;
      const pts = curve.points;
      const x = range(pts.map((p) => p.x), { log: true });
      const y = range(pts.flatMap((p) => [p.decode.aggregate_tok_s, p.decode.aggregate_ceiling_tok_s, p.decode.estimate_tok_s]), { log: true });
      clear(out, 
        setupLine(one),
        h('h3', { class: 'sec' }, t('r.perStream', { batch: int(d.batch) })),
        ceilingPair(d),
        h('h3', { class: 'sec' }, t('r.aggregate', { batch: int(d.batch) })),
        ceilingPair(d, { aggregate: true, prefix: 'aggregate-' }),
        facts([
          [t('r.bound'), t(`bound.${d.bound}`)],
          [t('r.ridgeBatch'), h('span', { 'data-testid': 'ridge-batch', 'data-value': d.ridge_batch ?? '' }, d.ridge_batch ? num(d.ridge_batch) : t('r.noPeak'))],
          [t('r.bytesPerStep'), gbNum(d.bytes_per_step / 1e9)],
          [t('r.stepTime'), `${num(d.step_time_s * 1e3)} ${t('unit.ms')}`],
        ]),
        h('figure', {},
          chart({
            title: t('c.batchTitle'), x, y, xLabel: t('c.batch'), yLabel: t('c.tokS'),
            series: [
              { name: 'aggregate-ceiling', cls: 's-ceiling', dashed: true, points: pts.map((p) => [p.x, p.decode.aggregate_ceiling_tok_s]) },
              { name: 'aggregate', cls: 's-estimate', dots: true, points: pts.map((p) => [p.x, p.decode.aggregate_tok_s]) },
              { name: 'per-stream', cls: 's-stream', points: pts.map((p) => [p.x, p.decode.estimate_tok_s]) },
            ],
            vlines: [
              { x: d.batch, label: t('c.yourBatch'), cls: 'v-you' },
              d.ridge_batch ? { x: d.ridge_batch, label: t('c.ridge'), cls: 'v-ridge' } : null,
            ].filter(Boolean),
          }),
          legend([['s-ceiling', t('c.aggregateCeiling')], ['s-estimate', t('c.aggregateEstimate')], ['s-stream', t('c.perStreamEstimate')]]),
          h('figcaption', {}, t('c.batchCaption'))),
        why(one));
    },
  });
}
