// SVG plots drawn from API JSON: line charts (linear or log axes) and a roofline.
import { h, s } from './dom.js';
import { compact } from './format.js';

const W = 680;
const H = 340;
const PAD = { left: 64, right: 20, top: 16, bottom: 48 };

function scale(axis, from, to) {
  const { min, max, log } = axis;
  const f = log ? Math.log10 : (v) => v;
  const a = f(min);
  const b = f(max);
  return (v) => from + ((f(v) - a) / (b - a || 1)) * (to - from);
}

function niceStep(span, count) {
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const unit = [1, 2, 2.5, 5, 10].find((m) => m * power >= raw) || 10;
  return unit * power;
}

export function ticks(axis, count = 5) {
  const { min, max, log } = axis;
  if (log) {
    const out = [];
    for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e += 1) {
      for (const m of (Math.log10(max / min) <= 2.5 ? [1, 2, 5] : [1])) {
        const v = m * 10 ** e;
        if (v >= min * 0.999 && v <= max * 1.001) out.push(v);
      }
    }
    return out;
  }
  const step = niceStep(max - min, count);
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Axis range covering `values`, padded; log axes snap to the surrounding powers of ten. */
export function range(values, { log = false, zero = false, pad = 0.08 } = {}) {
  const finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  let min = Math.min(...finite);
  let max = Math.max(...finite);
  if (log) return { min: 10 ** Math.floor(Math.log10(min)), max: 10 ** Math.ceil(Math.log10(max)), log: true };
  if (zero) min = Math.min(0, min);
  if (max === min) max = min + 1;
  return { min, max: max + (max - min) * pad, log: false };
}

/**
 * chart({x, y, series, vlines, regions, points, xLabel, yLabel, title})
 *  x, y: {min, max, log, format}; series: [{name, cls, points: [[x, y]], band: [[x, low, high]], dashed}]
 *  vlines: [{x, label, cls}]; regions: [{from, to, label, cls}] along x; points: [{x, y, label, cls}]
 */
export function chart(spec) {
  const sx = scale(spec.x, PAD.left, W - PAD.right);
  const sy = scale(spec.y, H - PAD.bottom, PAD.top);
  const fx = spec.x.format || compact;
  const fy = spec.y.format || compact;
  const inX = (v) => v >= spec.x.min && v <= spec.x.max;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': spec.title || '' });
  const plotBottom = H - PAD.bottom;

  for (const region of spec.regions || []) {
    const x0 = sx(Math.max(region.from, spec.x.min));
    const x1 = sx(Math.min(region.to, spec.x.max));
    if (x1 <= x0) continue;
    svg.append(s('rect', { x: x0, y: PAD.top, width: x1 - x0, height: plotBottom - PAD.top, class: `region ${region.cls || ''}` }));
    if (region.label) svg.append(s('text', { x: (x0 + x1) / 2, y: PAD.top + 14, class: 'region-label', 'text-anchor': 'middle' }, region.label));
  }
  for (const v of ticks(spec.x)) {
    svg.append(s('line', { x1: sx(v), x2: sx(v), y1: PAD.top, y2: plotBottom, class: 'grid' }));
    svg.append(s('text', { x: sx(v), y: plotBottom + 18, class: 'tick', 'text-anchor': 'middle' }, fx(v)));
  }
  for (const v of ticks(spec.y)) {
    svg.append(s('line', { x1: PAD.left, x2: W - PAD.right, y1: sy(v), y2: sy(v), class: 'grid' }));
    svg.append(s('text', { x: PAD.left - 8, y: sy(v) + 4, class: 'tick', 'text-anchor': 'end' }, fy(v)));
  }
  svg.append(s('line', { x1: PAD.left, x2: W - PAD.right, y1: plotBottom, y2: plotBottom, class: 'axis' }));
  svg.append(s('line', { x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: plotBottom, class: 'axis' }));
  if (spec.xLabel) svg.append(s('text', { x: (PAD.left + W - PAD.right) / 2, y: H - 8, class: 'label', 'text-anchor': 'middle' }, spec.xLabel));
  if (spec.yLabel) svg.append(s('text', { x: 14, y: (PAD.top + plotBottom) / 2, class: 'label', 'text-anchor': 'middle', transform: `rotate(-90 14 ${(PAD.top + plotBottom) / 2})` }, spec.yLabel));

  const clipY = (v) => Math.max(spec.y.min, Math.min(spec.y.max, v));
  for (const series of spec.series || []) {
    if (series.band) {
      const pts = series.band.filter(([x]) => inX(x));
      const upper = pts.map(([x, , hi]) => `${sx(x)},${sy(clipY(hi))}`);
      const lower = pts.slice().reverse().map(([x, lo]) => `${sx(x)},${sy(clipY(lo))}`);
      if (pts.length > 1) svg.append(s('polygon', { points: [...upper, ...lower].join(' '), class: `band ${series.cls || ''}` }));
    }
    const pts = series.points.filter(([x, y]) => inX(x) && Number.isFinite(y));
    if (pts.length > 1) {
      svg.append(s('polyline', { points: pts.map(([x, y]) => `${sx(x)},${sy(clipY(y))}`).join(' '), class: `line ${series.cls || ''}${series.dashed ? ' dashed' : ''}`, 'data-series': series.name }));
    }
    if (series.dots) for (const [x, y] of pts) svg.append(s('circle', { cx: sx(x), cy: sy(clipY(y)), r: 3, class: `dot ${series.cls || ''}` }));
  }
  for (const line of spec.vlines || []) {
    if (!inX(line.x)) continue;
    svg.append(s('line', { x1: sx(line.x), x2: sx(line.x), y1: PAD.top, y2: plotBottom, class: `vline ${line.cls || ''}` }));
    if (line.label) svg.append(s('text', { x: sx(line.x) + 4, y: PAD.top + 28, class: 'vlabel' }, line.label));
  }
  for (const point of spec.points || []) {
    if (!inX(point.x)) continue;
    svg.append(s('circle', { cx: sx(point.x), cy: sy(clipY(point.y)), r: 4.5, class: `pt ${point.cls || ''}` }));
    if (point.label) svg.append(s('text', { x: sx(point.x) + 7, y: sy(clipY(point.y)) - 7, class: 'ptlabel' }, point.label));
  }
  return svg;
}

/** A legend under a chart: the series names with their line style. */
export function legend(items) {
  return h('ul', { class: 'legend' }, items.map(([cls, label]) => h('li', {}, h('span', { class: `key ${cls}` }), label)));
}
