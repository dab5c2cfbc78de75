// Plots: decode speed along the context (KV reads grow with depth) and the roofline across batch sizes.
import { post } from '../api.js';
import { clear, h } from '../dom.js';
import { chart, legend, range } from '../chart.js';
import { SETUP, SETUP_DEFAULTS, SETUP_MORE, calculator } from '../form.js';
import { int, num } from '../format.js';
import { t } from '../i18n.js';
import { setupLine } from '../widgets.js';

function contextChart(curve) {
  const pts = curve.points;
  const x = range(pts.map((p) => p.x), { zero: true, pad: 0 });
  const y = range(pts.flatMap((p) => [p.decode.ceiling_tok_s, p.decode.interval_tok_s.low]), { zero: true });
  const firstMiss = pts.find((p) => !p.memory.fits);
  return h('figure', { 'data-testid': 'context-chart' },
    chart({
      title: t('c.contextTitle'), x, y, xLabel: t('c.context'), yLabel: t('c.tokS'),
      regions: firstMiss ? [{ from: firstMiss.x, to: x.max, label: t('c.noFit'), cls: 'r-nofit' }] : [],
      series: [
        { name: 'ceiling', cls: 's-ceiling', dashed: true, points: pts.map((p) => [p.x, p.decode.ceiling_tok_s]) },
        { name: 'kv-limit', cls: 's-kv', points: pts.map((p) => [p.x, p.roofline_tok_s]) },
        { name: 'estimate', cls: 's-estimate', dots: true, points: pts.map((p) => [p.x, p.decode.estimate_tok_s]), band: pts.map((p) => [p.x, p.decode.interval_tok_s.low, p.decode.interval_tok_s.high]) },
      ],
    }),
    legend([['s-ceiling', t('c.ceilingWeights')], ['s-kv', t('c.kvLimit')], ['s-estimate', t('c.estimateBand')]]),
    h('figcaption', {}, t('c.contextCaption')));
}

function rooflineChart(r) {
  const pts = r.decode;
  const xs = pts.map((p) => p.intensity_flop_per_byte);
  if (r.prefill) xs.push(r.prefill.intensity_flop_per_byte);
  if (r.ridge_flop_per_byte) xs.push(r.ridge_flop_per_byte);
  const x = range(xs, { log: true });
  const bw = r.bandwidth_gb_per_s * 1e9;
  const roof = (i) => Math.min(r.peak_tflops ?? Infinity, (bw * i) / 1e12);
  const steps = 60;
  const roofPts = Array.from({ length: steps + 1 }, (_, k) => {
    const i = x.min * (x.max / x.min) ** (k / steps);
    return [i, roof(i)];
  });
  const ys = [...roofPts.map(([, v]) => v), ...pts.map((p) => p.achieved_tflops)];
  if (r.prefill) ys.push(r.prefill.achieved_tflops);
  const y = range(ys, { log: true });
  const label = (p) => (p.batch === 1 || Math.log2(p.batch) % 2 === 0 ? `B=${p.batch}` : '');
  return h('figure', { 'data-testid': 'roofline-chart' },
    chart({
      title: t('c.rooflineTitle'), x, y, xLabel: t('c.intensity'), yLabel: t('c.tflops'),
      series: [
        { name: 'roof', cls: 's-ceiling', points: roofPts },
        { name: 'decode', cls: 's-estimate', dots: true, points: pts.map((p) => [p.intensity_flop_per_byte, p.achieved_tflops]) },
      ],
      vlines: r.ridge_flop_per_byte ? [{ x: r.ridge_flop_per_byte, label: t('c.ridge'), cls: 'v-ridge' }] : [],
      points: [
        ...pts.map((p) => ({ x: p.intensity_flop_per_byte, y: p.achieved_tflops, label: label(p), cls: 'p-decode' })),
        r.prefill ? { x: r.prefill.intensity_flop_per_byte, y: r.prefill.achieved_tflops, label: t('c.prefillPoint', { n: int(r.prefill.prompt_tokens) }), cls: 'p-prefill' } : null,
      ].filter(Boolean),
    }),
    legend([['s-ceiling', t('c.roof', { bw: num(r.bandwidth_gb_per_s), peak: r.peak_tflops ? num(r.peak_tflops) : '–' })], ['s-estimate', t('c.decodeSteps')], ['p-prefill', t('c.prefill')]]),
    h('figcaption', {}, r.peak_tflops ? t('c.rooflineCaption', { ridge: num(r.ridge_flop_per_byte) }) : t('c.noPeakCaption')));
}

export function mount(root) {
  return calculator(root, {
    modes: ['catalog', 'numbers'],
    fields: (mode) => ({ main: [...SETUP[mode], 'batch', 'prompt_tokens'], more: SETUP_MORE[mode] }),
    defaults: () => ({ ...SETUP_DEFAULTS, batch: '1', prompt_tokens: '512', tflops: '989' }),
    async call(body) {
      const { batch, ...rest } = body;
      const [curve, roof] = await Promise.all([
        post('/api/curve', { ...body, axis: 'context' }),
        post('/api/roofline', rest),
      ]);
      return { curve, roof, batch };
    },
    render(out, { curve, roof }) {
      const table = h('table', { class: 'data compact' },
        h('thead', {}, h('tr', {}, [t('c.batch'), t('c.intensity'), t('c.achieved'), t('c.aggregate'), t('r.bound')].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, roof.decode.map((p) => h('tr', {},
          h('td', {}, int(p.batch)), h('td', {}, num(p.intensity_flop_per_byte)), h('td', {}, num(p.achieved_tflops)),
          h('td', {}, num(p.aggregate_tok_s)), h('td', {}, t(`bound.${p.bound}`))))));
      clear(out, 
        setupLine({ model: curve.model, hardware: curve.hardware, engine: curve.engine }),
        h('h3', { class: 'sec' }, t('c.contextHead')),
        contextChart(curve),
        h('h3', { class: 'sec' }, t('c.rooflineHead')),
        rooflineChart(roof),
        h('details', { class: 'more' }, h('summary', {}, t('c.points')), h('div', { class: 'tablewrap' }, table)));
    },
  });
}
