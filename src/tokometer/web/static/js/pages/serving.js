// Serving: many users on one deployment. A rate sweep through the step-level simulator draws p99 TTFT
// and TPOT against throughput (SLO lines, knee marked); the slider picks a rate; the plan table lists
// the cheapest setups meeting the SLOs at that rate (`tokometer simulate --rate` / `tokometer plan`); a
// button draws the predicted frontier, tokens/s per GPU against tokens/s per user (`simulate --frontier`).
import { ApiError, post } from '../api.js';
import { clear, h } from '../dom.js';
import { calculator } from '../form.js';
import { chart, legend, range } from '../chart.js';
import { int, num, pct } from '../format.js';
import { message, t } from '../i18n.js';
import { facts } from '../widgets.js';

const MAIN = ['model', 'quant', 'hw', 'serving_engine', 'tp', 'replicas', 'prompt_tokens', 'output_tokens', 'rate_per_s', 'slo_ttft_ms', 'slo_tpot_ms'];
// the advanced groups: speculative decoding and shared prefixes, with `tokometer simulate`'s names
const ADVANCED = [
  ['g.speculative', ['spec_method', 'spec_tokens', 'spec_acceptance', 'draft_model']],
  ['g.prefix', ['system_prompt', 'system_prompt_share', 'system_prompts', 'turns']],
];
const SPEC = ADVANCED[0][1]; // the plan speculates as the simulated deployment does
const DEFAULTS = {
  model: 'llama-3.1-8b', quant: 'bf16', hw: 'h100-sxm', prompt_tokens: '1000', output_tokens: '200', slo_ttft_ms: '500', slo_tpot_ms: '50',
};

const ms = (s) => (s === null || s === undefined ? null : s * 1e3);
const msText = (s) => (s === null || s === undefined ? '–' : `${num(s * 1e3)} ${t('unit.ms')}`);

/** The simulate request for a form's values: the page's names, the API's names. */
function simulateBody(values) {
  const { serving_engine: engine, ...rest } = values;
  return { ...rest, ...(engine ? { engine } : {}) };
}

/**
 * The latency-throughput chart of an `/api/simulate` answer: p99 TTFT and TPOT (ms, log) against
 * output tok/s, the SLO lines, the knee and the chosen point; `measured` adds a bench run's levels.
 */
export function servingChart(data, { slo = {}, measured = [], showChosen = true } = {}) {
  const pts = data.points.filter((p) => p.ttft_s.p99 !== null);
  const loops = (data.closed_loops || []).filter((p) => p.ttft_s.p99 !== null);
  const knee = data.points.find((p) => p.rate_per_s === data.knee_rate_per_s);
  const chosen = data.chosen;
  const xs = [...pts.map((p) => p.tput_out_tok_s), ...loops.map((p) => p.tput_out_tok_s), chosen.tput_out_tok_s, ...measured.map((m) => m.tput_out_tok_s)];
  const ys = [...pts.flatMap((p) => [ms(p.ttft_s.p99), ms(p.tpot_s.p99)]), ...loops.map((p) => ms(p.ttft_s.p99)), ms(slo.ttft), ms(slo.tpot),
    ...measured.flatMap((m) => [m.ttft_p99_ms, m.tpot_p99_ms])].filter((v) => v > 0);
  const x = range(xs, { zero: true });
  const y = range(ys, { log: true });
  const flat = (value, name, cls) => (value ? [{ name, cls: `${cls} dashed`, points: [[x.min, value], [x.max, value]] }] : []);
  const points = [];
  if (knee) points.push({ x: knee.tput_out_tok_s, y: ms(knee.ttft_s.p99), label: t('serve.knee'), cls: 'p-knee' });
  if (showChosen && chosen.ttft_s.p99 !== null) points.push({ x: chosen.tput_out_tok_s, y: ms(chosen.ttft_s.p99), label: t('serve.you'), cls: '' });
  for (const m of measured) {
    if (m.ttft_p99_ms > 0) points.push({ x: m.tput_out_tok_s, y: m.ttft_p99_ms, label: m.label, cls: 'p-measured' });
  }
  const items = [['s-estimate', t('serve.ttftP99')], ['s-stream', t('serve.tpotP99')]];
  if (loops.length) items.push(['s-kv', t('serve.closedLoops')]);
  if (slo.ttft || slo.tpot) items.push(['s-ceiling', t('serve.slo')]);
  if (measured.length) items.push(['p-measured', t('serve.measured')]);
  return h('figure', { 'data-testid': 'serving-chart' },
    chart({
      title: t('serve.chartTitle'), x, y, xLabel: t('serve.xLabel'), yLabel: t('serve.yLabel'),
      series: [
        { name: 'ttft-p99', cls: 's-estimate', dots: true, points: pts.map((p) => [p.tput_out_tok_s, ms(p.ttft_s.p99)]) },
        { name: 'tpot-p99', cls: 's-stream', dots: true, points: pts.map((p) => [p.tput_out_tok_s, ms(p.tpot_s.p99)]) },
        { name: 'closed-ttft-p99', cls: 's-kv', dots: true, points: loops.map((p) => [p.tput_out_tok_s, ms(p.ttft_s.p99)]) },
        ...flat(ms(slo.ttft), 'slo-ttft', 's-ceiling'),
        ...flat(ms(slo.tpot), 'slo-tpot', 's-ceiling'),
      ],
      points,
    }),
    legend(items),
    h('figcaption', {}, t('serve.caption')));
}

/** The speculative decoding line: method, drafts per pass, acceptance and tokens kept per pass (its source as a tooltip). */
function specLine(spec) {
  return h('span', { 'data-testid': 'serve-spec', 'data-value': spec.tokens_per_pass, title: spec.source || '' },
    t('serve.specLine', { method: t(`spec.${spec.method}`), k: int(spec.draft_tokens), a: num(spec.acceptance), n: num(spec.tokens_per_pass) })
    + (spec.draft_model ? ` · ${spec.draft_model}` : ''));
}

function summary(data) {
  const c = data.chosen;
  const spec = data.deployment.speculation;
  const shares = c.time_shares || {};
  const bound = ['memory', 'compute', 'overhead'].filter((k) => shares[`bound_${k}`])
    .sort((a, b) => shares[`bound_${b}`] - shares[`bound_${a}`])
    .map((k) => `${t(`serve.bound.${k}`)} ${pct(shares[`bound_${k}`])}`).join(', ');
  const value = (testid, v, text) => h('span', { 'data-testid': testid, 'data-value': v ?? '' }, text);
  return facts([
    [t('serve.offered'), value('serve-rate', c.rate_per_s, `${num(c.rate_per_s)} ${t('unit.req_s')}`)],
    [t('serve.served'), value('serve-req-s', c.req_per_s, `${num(c.req_per_s)} ${t('unit.req_s')} · ${int(c.tput_out_tok_s)} ${t('unit.tok_s')}`)],
    [t('serve.ttft'), value('serve-ttft-p99', c.ttft_s.p99, `${msText(c.ttft_s.p50)} · ${msText(c.ttft_s.p99)}`)],
    [t('serve.tpot'), value('serve-tpot-p99', c.tpot_s.p99, `${msText(c.tpot_s.p50)} · ${msText(c.tpot_s.p99)}`)],
    [t('serve.e2e'), `${msText(c.e2e_s.p50)} · ${msText(c.e2e_s.p99)}`],
    [t('serve.queue'), `${msText(c.queue_s.mean)}`],
    [t('serve.kv'), `${pct(c.mean_kv_utilisation)} ${t('serve.ofTokens', { n: int(c.kv_capacity_tokens) })}`],
    [t('serve.preemptions'), value('serve-preemptions', c.preemptions, int(c.preemptions))],
    [t('serve.batch'), num(c.mean_batch)],
    c.goodput_share !== null ? [t('serve.goodput'), pct(c.goodput_share)] : null,
    c.prefix_hit_share !== null && c.prefix_hit_share !== undefined
      ? [t('serve.prefixHit'), value('serve-prefix-hit', c.prefix_hit_share, pct(c.prefix_hit_share))] : null,
    spec ? [t('serve.spec'), specLine(spec)] : null,
    [t('serve.steps'), value('serve-binding', c.binding, `${bound} · ${t('serve.split', { prefill: pct(shares.prefill || 0), decode: pct(shares.decode || 0) })}`)],
  ]);
}

function planTable(plan, rate) {
  if (!plan) return h('p', { class: 'muted' }, t('serve.planNeedsSlo'));
  if (plan.error) return h('p', { class: 'muted', 'data-testid': 'plan-error' }, message(plan.error));
  if (!plan.configs.length) {
    return h('p', { 'data-testid': 'plan-none' }, t('serve.planNone', { ttft: msText(plan.best_ttft_p99_s), tpot: msText(plan.best_tpot_p99_s) }));
  }
  const cols = ['hardware', 'quant', 'tp', 'replicas', 'gpus', 'usdHour', 'usdM', 'ttft', 'tpot', 'binding'];
  return h('div', {},
    h('p', { class: 'muted' }, t('serve.planLead', { rate: num(rate), n: int(plan.considered) })),
    h('div', { class: 'tablewrap' }, h('table', { class: 'data', 'data-testid': 'plan-table' },
      h('thead', {}, h('tr', {}, cols.map((c, i) => h('th', { scope: 'col', class: i >= 2 && i < 9 ? 'num' : null }, t(`serve.col.${c}`))))),
      h('tbody', {}, plan.configs.map((r) => h('tr', {},
        h('td', {}, r.hardware), h('td', { 'data-spec': r.spec ? r.spec.method : null }, r.spec ? `${r.quant} · ${t(`spec.${r.spec.method}`)}` : r.quant), h('td', { class: 'num' }, int(r.tp)), h('td', { class: 'num' }, r.disagg || int(r.replicas)),
        h('td', { class: 'num' }, int(r.gpus)), h('td', { class: 'num' }, `$${num(r.usd_per_hour)}`),
        h('td', { class: 'num', 'data-value': r.usd_per_million_output_tokens }, `$${num(r.usd_per_million_output_tokens)}`),
        h('td', { class: 'num' }, num(ms(r.ttft_p99_s))), h('td', { class: 'num' }, num(ms(r.tpot_p99_s))),
        h('td', { class: 'wrap' }, message(r.binding))))))));
}

/** The frontier request for a form's values: the deployment and lengths, each layout that fits tried (with and without the form's speculative decoding). */
function frontierBody(values) {
  const { model, hw, quant, serving_engine: engine, prompt_tokens: prompt, output_tokens: output } = values;
  const { spec_method, spec_tokens, spec_acceptance, draft_model } = values; // each layout also with speculation
  return Object.fromEntries(Object.entries({ model, hw, quant, engine, prompt_tokens: prompt, output_tokens: output,
    spec_method, spec_tokens, spec_acceptance, draft_model })
    .filter(([, v]) => v !== undefined && v !== null && v !== ''));
}

/**
 * The chart of an `/api/frontier` answer: every simulated point (layout x concurrency) as a dot, the
 * Pareto set as a line, tokens/s per user across and tokens/s per GPU up, as InferenceMAX draws it;
 * each layout's own points are joined in order of users.
 */
export function frontierChart(data) {
  const all = data.points;
  const front = data.frontier;
  const x = range(all.map((p) => p.tok_s_per_user), { zero: true });
  const y = range(all.map((p) => p.tok_s_per_gpu), { zero: true });
  const ends = [front[0], front[front.length - 1]].filter(Boolean);
  const layouts = new Map(); // one line per layout, through its user counts
  for (const p of all) {
    const key = `${p.hardware} ${p.quant} ${p.layout}`;
    if (!layouts.has(key)) layouts.set(key, []);
    layouts.get(key).push(p);
  }
  return h('figure', { 'data-testid': 'frontier-chart' },
    chart({
      title: t('serve.frontier.chartTitle'), x, y, xLabel: t('serve.frontier.xLabel'), yLabel: t('serve.frontier.yLabel'),
      series: [
        ...[...layouts.values()].map((pts, i) => ({ name: `layout-${i}`, cls: 's-kv', dots: true,
          points: pts.sort((a, b) => a.concurrency - b.concurrency).map((p) => [p.tok_s_per_user, p.tok_s_per_gpu]) })),
        { name: 'frontier', cls: 's-estimate', dots: true, points: front.map((p) => [p.tok_s_per_user, p.tok_s_per_gpu]) },
      ],
      points: ends.map((p) => ({ x: p.tok_s_per_user, y: p.tok_s_per_gpu, label: `${p.layout} · ${int(p.concurrency)}`, cls: '' })),
    }),
    legend([['s-estimate', t('serve.frontier.pareto')], ['s-kv', t('serve.frontier.others')]]),
    h('figcaption', {}, t('serve.frontier.caption', { prompt: int(data.prompt_tokens), output: int(data.output_tokens) })));
}

function frontierTable(data) {
  const cols = ['layout', 'gpus', 'users', 'perUser', 'perGpu', 'ttft'];
  return h('div', { class: 'tablewrap' }, h('table', { class: 'data', 'data-testid': 'frontier-table' },
    h('thead', {}, h('tr', {}, cols.map((c, i) => h('th', { scope: 'col', class: i ? 'num' : null }, t(`serve.frontier.col.${c}`))))),
    h('tbody', {}, data.frontier.map((p) => h('tr', {},
      h('td', {}, `${p.hardware} · ${p.quant} · ${p.layout}`), h('td', { class: 'num' }, int(p.gpus)),
      h('td', { class: 'num' }, int(p.concurrency)), h('td', { class: 'num', 'data-value': p.tok_s_per_user }, num(p.tok_s_per_user)),
      h('td', { class: 'num', 'data-value': p.tok_s_per_gpu }, num(p.tok_s_per_gpu)),
      h('td', { class: 'num' }, `${num(ms(p.ttft_mean_s))} · ${num(ms(p.ttft_p99_s))}`))))));
}

/** The frontier section: drawn on demand (a few seconds of simulation), for the form's deployment. */
function frontierSection(body) {
  const out = h('div', { 'data-testid': 'frontier-out', 'aria-live': 'polite' });
  const button = h('button', { type: 'button', 'data-testid': 'frontier-draw' }, t('serve.frontier.draw'));
  button.addEventListener('click', async () => {
    button.disabled = true;
    clear(out, h('p', { class: 'muted' }, t('serve.frontier.working')));
    try {
      const data = await post('/api/frontier', frontierBody(body));
      clear(out, frontierChart(data), frontierTable(data));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      clear(out, h('p', { class: 'muted', 'data-testid': 'frontier-error' }, message(error.message)));
    } finally {
      button.disabled = false;
    }
  });
  return h('div', {}, h('p', { class: 'muted' }, t('serve.frontier.lead')), button, out);
}

/** A range input beside the rate field: dragging it writes the field, which recomputes (debounced). */
function slider(form) {
  const input = h('input', { type: 'range', min: '0', max: '1', step: 'any', 'data-testid': 'rate-slider', 'aria-label': t('f.rate_per_s') });
  input.addEventListener('input', () => {
    const field = form.elements.rate_per_s;
    field.value = String(Number(input.value).toPrecision(3));
    field.dispatchEvent(new Event('input', { bubbles: true }));
  });
  form.querySelector('[data-field="rate_per_s"]').append(input);
  return input;
}

function setBar(bar, last) {
  if (!bar || !last) return;
  const rates = last.sim.points.map((p) => p.rate_per_s);
  bar.min = String(Math.min(...rates));
  bar.max = String(Math.max(...rates));
  bar.value = String(last.rate);
}

export async function mount(root) {
  let bar = null;
  let last = null;
  const page = await calculator(root, {
    modes: ['catalog'],
    fields: () => ({ main: MAIN, advanced: ADVANCED }),
    defaults: () => DEFAULTS,
    async call(body) {
      const sim = await post('/api/simulate', simulateBody(body));
      const rate = sim.chosen.rate_per_s;
      let plan = null;
      if (body.slo_ttft_ms && body.slo_tpot_ms) {
        const ask = { model: body.model, rate_per_s: rate, prompt_tokens: body.prompt_tokens, output_tokens: body.output_tokens,
          slo_ttft_ms: body.slo_ttft_ms, slo_tpot_ms: body.slo_tpot_ms, ...(body.serving_engine ? { engine: body.serving_engine } : {}),
          ...Object.fromEntries(SPEC.filter((k) => body[k] !== undefined && body[k] !== '').map((k) => [k, body[k]])) };
        try {
          plan = await post('/api/plan', ask);
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
          plan = { error: error.message }; // the curve stands without the plan
        }
      }
      return { sim, plan, rate };
    },
    render(out, { sim, plan, rate }, body) {
      last = { sim, rate };
      setBar(bar, last);
      const kneeRate = sim.knee_rate_per_s;
      clear(out,
        h('p', { class: 'setup' }, h('b', {}, sim.deployment.label), ` · ${t('serve.kvCap', { n: int(sim.deployment.kv_capacity_tokens) })}`),
        h('p', { 'data-testid': 'knee', 'data-value': kneeRate ?? '' },
          kneeRate ? t('serve.kneeAt', { rate: num(kneeRate) }) : t('serve.noKnee')),
        servingChart(sim, { slo: { ttft: body.slo_ttft_ms ? body.slo_ttft_ms / 1e3 : null, tpot: body.slo_tpot_ms ? body.slo_tpot_ms / 1e3 : null } }),
        h('h3', { class: 'sec' }, t('serve.atRate', { rate: num(rate) })),
        summary(sim),
        h('h3', { class: 'sec' }, t('serve.planTitle')),
        planTable(plan, rate),
        h('h3', { class: 'sec' }, t('serve.frontier.title')),
        frontierSection(body));
    },
  });
  bar = slider(page.form);
  setBar(bar, last);
  return page;
}
