// SVG plots drawn from API JSON: line charts (linear or log axes) and a roofline.
import { h, s } from './dom.js';
import { compact } from './format.js';

const WIDE = { W: 680, H: 340 };
const PAD = { left: 64, right: 20, top: 16, bottom: 48 };
const LABEL_PX = 11; // .tick, .vlabel, .ptlabel font size in style.css

/**
 * The drawing's size in SVG units. A chart scales to its box, so on a phone a 680-unit drawing
 * would shrink its 11-unit text to about 5 px; below 720 px of viewport the drawing is made as
 * wide as the box it will fill (viewport minus page and figure padding), so text stays at 11 px.
 */
export function frame(wide = WIDE.W, height = WIDE.H) {
  const viewport = document.documentElement.clientWidth || window.innerWidth || 1280;
  if (viewport >= 720) return { W: wide, H: height };
  const W = Math.max(280, Math.round(viewport - 56));
  return { W, H: Math.max(Math.round(height * 0.7), Math.round((W * height) / wide)) };
}

/** Labels that would overlap one another or leave the plot are moved, or dropped when no spot is free. */
function labeller(svg, bounds) {
  const placed = [];
  const fits = (box) => box.x0 >= bounds.x0 && box.x1 <= bounds.x1 && box.y0 >= bounds.y0 && box.y1 <= bounds.y1
    && !placed.some((o) => box.x0 < o.x1 && box.x1 > o.x0 && box.y0 < o.y1 && box.y1 > o.y0);
  return {
    /** Reserve a region (a point's dot) so no label covers it. */
    block(x, y, r) { placed.push({ x0: x - r, x1: x + r, y0: y - r, y1: y + r }); },
    place(x, y, text, cls, spots) {
      const width = text.length * LABEL_PX * 0.6;
      for (const [dx, dy, anchor] of spots) {
        const left = x + dx - (anchor === 'end' ? width : anchor === 'middle' ? width / 2 : 0);
        const box = { x0: left - 2, x1: left + width + 2, y0: y + dy - LABEL_PX, y1: y + dy + 3 };
        if (fits(box)) {
          placed.push(box);
          svg.append(s('text', { x: x + dx, y: y + dy, class: cls, 'text-anchor': anchor }, text));
          return true;
        }
      }
      return false;
    },
  };
}

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
  const { W, H } = frame();
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
  const labels = labeller(svg, { x0: PAD.left, x1: W - PAD.right + 16, y0: PAD.top, y1: plotBottom });
  for (const line of spec.vlines || []) {
    if (!inX(line.x)) continue;
    svg.append(s('line', { x1: sx(line.x), x2: sx(line.x), y1: PAD.top, y2: plotBottom, class: `vline ${line.cls || ''}` }));
  }
  const points = (spec.points || []).filter((point) => inX(point.x));
  for (const point of points) {
    const [cx, cy] = [sx(point.x), sy(clipY(point.y))];
    svg.append(s('circle', { cx, cy, r: 4.5, class: `pt ${point.cls || ''}` }));
    labels.block(cx, cy, 5);
  }
  // vertical-line labels first (they name the regions), then the points' own, each beside its dot
  (spec.vlines || []).filter((line) => inX(line.x) && line.label).forEach((line, i) => {
    const y = PAD.top + 14 + 14 * (i % 2);
    labels.place(sx(line.x), y, line.label, 'vlabel', [[4, 0, 'start'], [-4, 0, 'end'], [4, 28, 'start'], [-4, 28, 'end']]);
  });
  for (const point of [...points].reverse()) { // the last point (a prefill, the largest batch) is the one to keep
    if (!point.label) continue;
    labels.place(sx(point.x), sy(clipY(point.y)), point.label, 'ptlabel', [[8, 16, 'start'], [8, -8, 'start'], [-8, -8, 'end'], [-8, 16, 'end'], [0, 22, 'middle'], [0, -12, 'middle']]);
  }
  return svg;
}

/** A legend under a chart: the series names with their line style. */
export function legend(items) {
  return h('ul', { class: 'legend' }, items.map(([cls, label]) => h('li', {}, h('span', { class: `key ${cls}` }), label)));
}
