// Throughput: the seed calculator. Parameters x precision -> weight bytes; bandwidth / bytes -> ceiling.
// The advanced section adds the levers: tensor/pipeline parallel, CPU offload, speculative decoding;
// their results come from the estimate's `parallel`, `offload` and `speculative` sections.
import { catalog, post } from '../api.js';
import { clear, h } from '../dom.js';
import { ADVANCED, SETUP, SETUP_DEFAULTS, SETUP_MORE, calculator } from '../form.js';
import { gbNum, gbps, int, msOrUs, num, pct, plain } from '../format.js';
import { t } from '../i18n.js';
import { bandBar, ceilingPair, facts, figure, fitVerdict, precisionChoice, setupLine, why } from '../widgets.js';

export function formula(data) {
  const bw = data.hardware.memory_bandwidth_gb_per_s;
  const gb = data.decode.weight_bytes_per_token / 1e9;
  const tp = data.parallel?.tp || 1;
  const devices = tp > 1 ? [h('var', {}, 'TP'), ' × '] : [];
  return h('p', { class: 'formula', 'data-testid': 'formula' },
    h('var', {}, 'v'), ' = ', devices, h('var', {}, 'BW'), ' ÷ ', h('var', {}, 'M'), ' = ',
    tp > 1 ? `${int(tp)} × ` : '',
    h('span', { class: 'nb' }, gbps(bw)), ' ÷ ', h('span', { class: 'nb' }, gbNum(gb)), ' = ', h('b', { class: 'nb' }, `${num(data.decode.ceiling_tok_s)} ${t('unit.tok_s')}`));
}

/** A value with its raw number in data-value, for the facts lists (tests read it). */
function tagged(testid, value, text) {
  return h('span', { 'data-testid': testid, 'data-value': value ?? '' }, text);
}

/** A time as ms, or µs below a millisecond (a pipeline hop, an all-reduce). */
const ms = msOrUs;

/** Tensor and pipeline parallelism: the speedup over one device, the link, what each device holds. */
export function parallelResult(data) {
  const p = data.parallel;
  if (!p || p.devices <= 1) return null;
  const per = p.usable_per_device_gb === null
    ? gbNum(p.memory_per_device_gb)
    : t('r.perDeviceOf', { need: num(p.memory_per_device_gb), have: num(p.usable_per_device_gb) });
  return h('section', { class: 'lever', 'data-testid': 'parallel' },
    h('h3', { class: 'sec' }, t('r.parallelHead', { devices: int(p.devices), tp: int(p.tp), pp: int(p.pp) })),
    facts([
      p.speedup !== null ? [t('r.parallelSpeedup'), tagged('parallel-speedup', p.speedup, `${num(p.speedup)}×`)] : null,
      [t('r.singleDevice'), tagged('single-device', p.single_device_tok_s, `${num(p.single_device_tok_s)} ${t('unit.tok_s')}`)],
      p.link ? [t('r.link'), `${p.link} (${gbps(p.link_gb_per_s)})`] : null,
      p.tp > 1 ? [t('r.allreduces'), t('r.allreducesValue', { n: int(p.allreduces_per_step), each: num(p.allreduce_each_s * 1e6), total: ms(p.allreduce_time_s) })] : null,
      p.pp > 1 ? [t('r.hops'), t('r.hopsValue', { n: int(p.pipeline_hops), each: ms(p.pipeline_hop_time_s / p.pipeline_hops), total: ms(p.pipeline_hop_time_s) })] : null,
      [t('r.memoryPerDevice'), h('span', { class: p.fits_per_device ? '' : 'no' }, per)],
    ]),
    h('p', { class: 'note' }, t(p.tp > 1 ? 'r.parallelNoteTp' : 'r.parallelNotePp')));
}

/** CPU offload (whole layers, or a MoE's experts): where the weights sit and where the time of a token goes. */
export function offloadResult(data) {
  const o = data.offload;
  if (!o || !o.active) return null;
  const cpuSide = Math.max(o.cpu_time_s, o.transfer_time_s);
  const total = o.gpu_time_s + cpuSide || 1;
  const part = (cls, seconds, label) => {
    const el = h('span', { class: `part ${cls}`, title: `${label}: ${ms(seconds)}` });
    el.style.width = `${((seconds / total) * 100).toFixed(2)}%`;
    return el;
  };
  const where = t(o.mode === 'stream' ? 'r.offloadPcie' : 'r.offloadRam');
  const bar = h('div', { class: 'stack split', role: 'img', 'aria-label': t('r.offloadAria', { gpu: ms(o.gpu_time_s), cpu: ms(cpuSide) }) },
    part('gpu', o.gpu_time_s, t('r.offloadGpu')), part('cpu', cpuSide, where));
  return h('section', { class: 'lever', 'data-testid': 'offload' },
    h('h3', { class: 'sec' }, o.expert_layers
      ? t('r.expertsHead', { k: int(o.expert_layers), n: int(o.n_layers) })
      : t('r.offloadHead', { gpu: int(o.gpu_layers), n: int(o.n_layers) })),
    h('div', { class: 'stackwrap', 'data-testid': 'offload-split', 'data-value': o.gpu_layers, 'data-cpu': o.cpu_layers }, bar,
      h('ul', { class: 'legend' },
        h('li', {}, h('span', { class: 'key gpu' }), t('r.offloadPart', { where: t('r.offloadGpu'), layers: int(o.gpu_layers), time: ms(o.gpu_time_s) })),
        h('li', {}, h('span', { class: 'key cpu' }), o.expert_layers
          ? t('r.expertsPart', { where, layers: int(o.expert_layers), time: ms(cpuSide) })
          : t('r.offloadPart', { where, layers: int(o.cpu_layers), time: ms(cpuSide) })))),
    facts([
      [t('r.offloadAllGpu', { n: int(o.n_layers) }), tagged('offload-gpu-only', o.gpu_only_tok_s, `${num(o.gpu_only_tok_s)} ${t('unit.tok_s')}`)],
      [t('r.offloadNoGpu'), tagged('offload-cpu-only', o.cpu_only_tok_s, `${num(o.cpu_only_tok_s)} ${t('unit.tok_s')}`)],
      [t('r.cpuHw'), `${o.cpu_hw} (${gbps(o.cpu_bandwidth_gb_per_s)})`],
      [t('r.cpuMemory'), h('span', { class: o.fits_cpu ? '' : 'no' }, t('r.perDeviceOf', { need: num(o.cpu_memory_gb), have: num(o.cpu_available_gb) }))],
      [t('r.gpuWeights'), gbNum(o.gpu_weights_gb)],
    ]),
    h('p', { class: 'note' }, t('r.offloadNote')));
}

/** Speculative decoding: its own ceiling and estimate side by side, and the speedup over plain decode. */
export function speculativeResult(data, values = {}, quants = []) {
  const s = data.speculative;
  if (!s || !s.active) return null;
  return h('section', { class: 'lever', 'data-testid': 'speculative' },
    h('h3', { class: 'sec' }, t('r.specHead', { draft: s.draft })),
    h('div', { class: 'pair' },
      h('section', { class: 'card ceiling' },
        h('h3', {}, t('r.specCeiling')),
        figure('spec-ceiling', s.ceiling_tok_s, t('unit.tok_s')),
        h('p', { class: 'sub' }, t('r.specCeilingSub'))),
      h('section', { class: 'card estimate' },
        h('h3', {}, t('r.specEstimate')),
        figure('spec-estimate', s.tok_s, t('unit.tok_s')),
        h('p', { class: 'sub' }, t('r.specSpeedup', { x: num(s.speedup), base: num(s.baseline_tok_s) })))),
    facts([
      [t('r.specSpeedupLabel'), tagged('spec-speedup', s.speedup, `${num(s.speedup)}×`)],
      [t('r.tokensPerPass'), num(s.tokens_per_pass)],
      [t('r.acceptance'), values.acceptance === undefined ? t('r.assumed', { value: plain(s.acceptance) }) : plain(s.acceptance)],
      [t('r.draftTokens'), int(s.draft_tokens)],
      [t('r.passTime'), t('r.passTimeValue', { total: ms(s.pass_time_s), k: int(s.draft_tokens), draft: ms(s.draft_step_time_s), verify: ms(s.verify_time_s) })],
      [t('r.breakEven'), s.break_even_acceptance === null ? t('r.breakEvenNever') : num(s.break_even_acceptance)],
      [t('r.draftWeights'), `${gbNum(s.draft_weights_gb)} (${quants.find((q) => q.id === s.draft_quant)?.name || s.draft_quant})`],
    ]),
    h('p', { class: 'note' }, t('r.specNote')));
}

export async function mount(root) {
  const [engines, quants] = await Promise.all([catalog('engines'), catalog('quants')]);
  return calculator(root, {
    modes: ['catalog', 'numbers'], // the first is the default: the CLI's default setup (Llama 3.1 8B, RTX 4090, Q4_K_M)
    fields: (mode) => ({ main: SETUP[mode], more: [...SETUP_MORE[mode], 'context_tokens'], advanced: ADVANCED }),
    defaults: () => SETUP_DEFAULTS,
    call: (body) => post('/api/estimate', body),
    render(out, data, values) {
      const d = data.decode;
      const offloaded = data.offload?.active;
      const fits = data.fit ? data.fit.fits : true;
      clear(out,
        setupLine(data),
        precisionChoice(data, values, engines, quants),
        fitVerdict(data),
        ceilingPair(d, { ifFit: !fits }),
        bandBar(d),
        offloaded ? null : formula(data),
        facts([
          [t('r.weights'), `${gbNum(data.model.weight_bytes / 1e9)} (${num(data.model.bits_per_weight)} ${t('unit.bitsPerWeight')})`],
          [t('r.bytesPerToken'), gbNum(d.bytes_per_token / 1e9)],
          [t('r.bound'), t(`bound.${d.bound}`)],
          [t('r.realisedLabel'), pct(d.realised_fraction)],
          [t('r.stepTime'), `${num(d.step_time_s * 1e3)} ${t('unit.ms')}`],
        ]),
        speculativeResult(data, values, quants),
        parallelResult(data),
        offloadResult(data),
        h('p', { class: 'note' }, t('p.throughput.note')),
        why(data));
    },
  });
}
