// Runs: stored benchmark runs, measured next to what tokometer predicted for them.
import { ApiError, get } from '../api.js';
import { clear, h } from '../dom.js';
import { int, num, pct } from '../format.js';
import { lang, message, t } from '../i18n.js';
import { readState, writeState } from '../url.js';
import { errorBox, facts, rich } from '../widgets.js';
import { servingChart } from './serving.js';

/** A `bench --rate/--concurrency` run on the simulated latency-throughput curve for its workload. */
async function overlay(run) {
  const box = h('section', { class: 'card plain', 'data-testid': 'run-overlay' }, h('h3', {}, t('runs.overlay')));
  try {
    const data = await get(`/api/runs/${encodeURIComponent(run.id)}/serving`);
    const d = data.simulated.deployment;
    box.append(
      h('p', { class: 'muted' }, t('runs.overlayLead', { label: d.label, prompt: data.simulated.workload.prompt_tokens, output: data.simulated.workload.output_tokens })),
      servingChart(data.simulated, { measured: data.measured, showChosen: false }),
      data.notes.length ? h('ul', { class: 'warnings' }, data.notes.map((note) => h('li', {}, message(note)))) : null);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    box.append(h('p', { class: 'muted', 'data-testid': 'run-overlay-error' }, rich(message(error.message))));
  }
  return box;
}

function when(iso) {
  if (!iso) return '–';
  const date = new Date(typeof iso === 'number' ? iso * 1000 : iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString(lang() === 'fr' ? 'fr-FR' : 'en-US', { dateStyle: 'medium', timeStyle: 'short' });
}

/** A measured/predicted ratio; above the ceiling is flagged: a finding, not a success. */
function ratio(value, ceiling = false) {
  if (value === null || value === undefined) return '–';
  return h('span', { class: ceiling && value > 1 ? 'over' : null, title: ceiling && value > 1 ? t('runs.overCeiling') : null }, pct(value));
}

export async function mount(root) {
  const state = readState();
  const detail = h('div', { class: 'detail', 'data-testid': 'run-detail' });
  let data;
  try {
    data = await get('/api/runs');
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    clear(root, errorBox(error));
    return;
  }
  const urls = data.bench_urls.length
    ? h('section', { class: 'card plain' }, h('h3', {}, rich(t('runs.endpoints'))), h('ul', { class: 'urls' }, data.bench_urls.map((u) => h('li', {}, h('code', {}, u)))), h('p', { class: 'muted' }, t('runs.endpointsHelp')))
    : null;
  if (!data.available || !data.runs.length) {
    clear(root, h('div', { class: 'empty', 'data-testid': 'runs-empty' },
      h('h3', {}, t(data.available ? 'runs.none' : 'runs.noStore')),
      h('p', {}, t('runs.howto')),
      h('pre', {}, 'tokometer bench --help')), urls);
    return;
  }

  async function show(id) {
    writeState(id ? { run: id } : {}, lang());
    for (const row of root.querySelectorAll('tr[data-id]')) row.classList.toggle('on', row.dataset.id === String(id));
    if (!id) { clear(detail); return; }
    try {
      const run = await get(`/api/runs/${encodeURIComponent(id)}`);
      const sm = run.summary || {};
      const grading = run.grading || {};
      const flags = grading.flags || [];
      clear(detail, h('section', { class: 'card plain' },
        h('h3', {}, t('runs.detail', { id: run.id })),
        facts([
          [t('runs.col.url'), run.url || '–'],
          [t('runs.col.decode'), `${num(sm.decode_tps?.median)} ${t('unit.tok_s')}`],
          [t('runs.col.ttft'), `${num(sm.ttft_ms?.median)} ${t('unit.ms')}`],
          [t('runs.col.requests'), `${int(sm.requests_ok)} / ${int(sm.requests_failed)}`],
          grading.verdict ? [t('runs.grade'), h('span', { 'data-testid': 'run-grade' }, rich(message(grading.verdict)))] : null,
        ]),
        flags.length ? h('ul', { class: 'warnings', 'data-testid': 'run-flags' }, flags.map((flag) => h('li', { 'data-code': flag.code, class: `flag-${flag.severity}` }, rich(message(flag.message))))) : null,
        h('details', {}, h('summary', {}, 'JSON'), h('pre', { class: 'json' }, JSON.stringify(run, null, 2)))));
      if (['rate', 'concurrency'].includes(run.mode)) detail.append(await overlay(run));
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      clear(detail, errorBox(error));
    }
  }

  const cols = ['started', 'model', 'hardware', 'mode', 'decode', 'ttft', 'requests', 'ceiling', 'estimate', 'vsEstimate', 'vsCeiling'];
  const table = h('table', { class: 'data', 'data-testid': 'runs-table' },
    h('thead', {}, h('tr', {}, cols.map((c, i) => h('th', { scope: 'col', class: i >= 4 ? 'num' : null }, t(`runs.col.${c}`))))),
    h('tbody', {}, data.runs.map((run) => {
      const sm = run.summary || {};
      const p = run.prediction || {};
      return h('tr', { 'data-id': String(run.id), tabindex: 0, onclick: () => show(run.id), onkeydown: (e) => { if (e.key === 'Enter') show(run.id); } },
        h('td', {}, when(run.started_at)), h('td', { class: 'wrap' }, run.model || '–'), h('td', { class: 'wrap' }, run.hardware || '–'), h('td', {}, run.mode || '–'),
        h('td', { class: 'num' }, num(sm.decode_tps?.median)), h('td', { class: 'num' }, num(sm.ttft_ms?.median)),
        h('td', { class: 'num' }, `${int(sm.requests_ok)} / ${int(sm.requests_failed)}`),
        h('td', { class: 'num' }, num(p.ceiling_tok_s)), h('td', { class: 'num' }, num(p.estimate_tok_s)),
        h('td', { class: 'num' }, ratio(run.measured_over_estimate)), h('td', { class: 'num' }, ratio(run.measured_over_ceiling, true)));
    })));
  clear(root, h('div', { class: 'tablewrap' }, table), detail, urls, h('p', { class: 'note' }, t('p.runs.note')));
  if (state.run) await show(state.run);
}
